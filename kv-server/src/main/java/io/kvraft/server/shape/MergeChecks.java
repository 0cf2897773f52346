package io.kvraft.server.shape;

import io.kvraft.server.host.RegionHost;
import io.kvraft.server.region.Region;

import io.kvraft.common.proto.KvProto.MergeResponse;
import io.kvraft.common.proto.KvProto.RegionState;
import io.kvraft.server.config.ServerConfig.MergeConfig;
import io.kvraft.server.config.ServerConfig.SplitConfig;
import io.kvraft.server.store.KeyRange;
import io.kvraft.server.store.KvStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * What a node does about merges on its own, every {@code merge.checkIntervalMs}: first it finishes or rolls back the
 * merges a crash or a leader change left prepared for longer than {@code merge.timeoutMs} whose left region it leads
 * (whether automatic merges are on or not); then, when they are on, it merges the first small pair of regions it leads
 * the left one of. The merges themselves are {@link Merger}'s.
 */
public final class MergeChecks implements Runnable {

    private static final Logger LOG = LoggerFactory.getLogger(MergeChecks.class);

    private final Merger merger;
    private final RegionHost host;
    private final KvStore store;
    private final MergeConfig config;
    private final SplitConfig split;
    private final Executor work;
    /** Per region seen merging here, when this node first saw it (System.nanoTime), for the recovery of stuck merges. */
    private final Map<Integer, Long> seenMerging = new ConcurrentHashMap<>();

    /** @param work where a stuck merge is finished: the merges' own thread */
    public MergeChecks(Merger merger, RegionHost host, KvStore store, MergeConfig config, SplitConfig split,
                       Executor work) {
        this.merger = merger;
        this.host = host;
        this.store = store;
        this.config = config;
        this.split = split;
        this.work = work;
    }

    /**
     * One check: merges left prepared for longer than merge.timeoutMs, whose left region this node leads, are finished
     * or rolled back; then, when merges are enabled, the first small pair of regions this node leads the left one of is
     * merged.
     */
    @Override
    public void run() {
        try {
            recover();
            if (config.enabled()) {
                mergeSmall();
            }
        } catch (RuntimeException e) {
            LOG.warn("merge check failed: {}", e.toString());
        }
    }

    private void recover() {
        long now = System.nanoTime();
        seenMerging.keySet().removeIf(id -> {
            Region r = host.region(id);
            return r == null || r.mergingInto() == 0;
        });
        for (Region right : host.regions()) {
            if (right.mergingInto() == 0) {
                continue;
            }
            long seen = seenMerging.computeIfAbsent(right.id(), id -> now);
            Region left = host.region(right.mergingInto());
            if (left == null || !left.isLeader() || merger.inMerge(left.id()) || merger.inMerge(right.id())
                    || now - seen < TimeUnit.MILLISECONDS.toNanos(config.timeoutMs())) {
                continue;
            }
            RegionState prepared = right.state();
            if (!merger.claim(left.id(), right.id())) {
                continue;
            }
            LOG.info("merge of region {} into region {}, prepared at index {}, is not finished: finishing or rolling it back",
                    right.id(), left.id(), prepared.getMergePreparedAt());
            seenMerging.remove(right.id());
            try {
                work.execute(() -> {
                    left.pinLeader(true);
                    try {
                        MergeResponse r = merger.finish(left, right, prepared);
                        LOG.info("merge of region {} into region {}: {}", right.id(), left.id(),
                                r.hasError() ? r.getError().getDetail() : "done");
                    } finally {
                        left.pinLeader(false);
                        merger.release(left.id(), right.id());
                    }
                });
            } catch (RejectedExecutionException closing) {
                merger.release(left.id(), right.id());
            }
            return; // one at a time
        }
    }

    private void mergeSmall() {
        List<Region> all = List.copyOf(host.regions());
        for (Region left : all) {
            if (!left.isLeader() || left.mergingInto() != 0 || merger.inMerge(left.id()) || left.range().end().length == 0) {
                continue;
            }
            Region right = null;
            for (Region r : all) {
                if (Arrays.equals(r.range().start(), left.range().end())) {
                    right = r;
                }
            }
            if (right == null || !Merger.samePeers(left, right) || right.mergingInto() != 0 || merger.inMerge(right.id())
                    || !small(left) || !small(right)) {
                continue;
            }
            Region r = right;
            LOG.info("regions {} {} and {} {} are small (merge.maxKeys {}, merge.maxBytes {}): merging them", left.id(),
                    left.range(), right.id(), right.range(), config.maxKeys(), config.maxBytes());
            merger.merge(left.id(), right.id(), left.epoch(), right.epoch()).thenAccept(resp -> {
                if (resp.hasError()) {
                    LOG.info("automatic merge of region {} into region {} not done: {}", r.id(), left.id(),
                            resp.getError().getDetail());
                }
            });
            return; // one per check: the next check sees the new sizes
        }
    }

    /** At most merge.maxKeys keys and merge.maxBytes bytes, and, with splits on, far from being split again. */
    private boolean small(Region region) {
        KeyRange range = region.range();
        long keys = store.approximateKeys(range);
        long bytes = store.approximateBytes(range);
        boolean farFromSplit = !split.enabled() || keys < split.maxKeys() / 4 && bytes < split.maxBytes() / 4;
        return keys <= config.maxKeys() && bytes <= config.maxBytes() && farFromSplit;
    }
}
