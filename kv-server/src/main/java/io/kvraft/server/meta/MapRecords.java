package io.kvraft.server.meta;

import io.kvraft.common.RegionViews;
import io.kvraft.common.proto.KvProto.ClusterMap;
import io.kvraft.common.proto.KvProto.MetaCommand;
import io.kvraft.common.proto.KvProto.NodeRecord;
import io.kvraft.common.proto.KvProto.RegionInfo;
import io.kvraft.server.balance.Placement;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * On the map's leader, every interval: writes into the map what the nodes' reports tell, so that it survives the leader
 * and any minority of nodes: the regions' shapes and voters, and the nodes found down. One proposal of each kind at a
 * time.
 */
final class MapRecords {

    private static final Logger LOG = LoggerFactory.getLogger(MapRecords.class);

    private final MetaGroup group;
    private final NodeReports reports;
    private final long downAfterNanos;
    private volatile boolean recording;
    private volatile boolean recordingDown;

    MapRecords(MetaGroup group, NodeReports reports, long downAfterMs) {
        this.group = group;
        this.reports = reports;
        this.downAfterNanos = TimeUnit.MILLISECONDS.toNanos(downAfterMs);
    }

    /**
     * Records the regions in the map when the nodes' reports tell of a change (a split, a merge, a region's voters or
     * conf version). Only a record that covers the key space is proposed.
     */
    void recordRegions(ClusterMap map) {
        if (recording || reports.isEmpty()) {
            return;
        }
        RegionViews views = reports.recordAndReports(map);
        if (!views.covers()) {
            return;
        }
        List<RegionInfo> record = views.regions().stream().map(MapRecords::recordOf).toList();
        if (record.equals(map.getRegionsList())) {
            return;
        }
        recording = true;
        group.propose(MetaCommand.newBuilder().setRegions(io.kvraft.common.proto.KvProto.RegionRecords.newBuilder()
                .addAllRegions(record)).build()).whenComplete((m, e) -> {
                    recording = false;
                    if (e != null) {
                        LOG.debug("cluster map: recording {} regions failed: {}", record.size(), e.toString());
                    }
                });
    }

    /**
     * Records in the map a node found down (silent longer than {@code placement.downAfterMs}), and one that reports again:
     * a new leader of the map then treats a node the last one found down as down at once.
     */
    void recordDown(ClusterMap map, Placement.View view) {
        if (recordingDown) {
            return;
        }
        for (NodeRecord n : map.getNodesList()) {
            boolean down = view.down().contains(n.getEndpoint());
            boolean back = n.getDownSinceMs() != 0 && view.live().contains(n.getEndpoint());
            if (down && n.getDownSinceMs() == 0 || back) {
                long since = back ? 0 : System.currentTimeMillis();
                recordingDown = true;
                group.propose(MetaCommand.newBuilder().setSetDown(NodeRecord.newBuilder().setEndpoint(n.getEndpoint())
                        .setDownSinceMs(since)).build()).whenComplete((m, e) -> {
                            recordingDown = false;
                            if (e == null) {
                                LOG.info(back ? "cluster map: node {} reports again: no longer down"
                                        : "cluster map: node {} is down (silent longer than placement.downAfterMs {} ms):"
                                        + " its replicas are rebuilt on other nodes", n.getEndpoint(),
                                        TimeUnit.NANOSECONDS.toMillis(downAfterNanos));
                            }
                        });
                return;
            }
        }
    }

    /** What the map records of a region: its shape and voters, not who leads it (peers sorted, so records compare). */
    static RegionInfo recordOf(RegionInfo r) {
        return RegionInfo.newBuilder().setId(r.getId()).setStartKey(r.getStartKey()).setEndKey(r.getEndKey())
                .setEpoch(r.getEpoch()).setConfVer(r.getConfVer())
                .addAllPeers(r.getPeersList().stream().sorted().toList()).build();
    }
}
