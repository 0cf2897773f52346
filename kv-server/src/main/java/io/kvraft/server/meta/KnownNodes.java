package io.kvraft.server.meta;

import io.kvraft.common.proto.KvProto.ClusterMap;
import io.kvraft.common.proto.KvProto.NodeRecord;
import io.kvraft.common.proto.KvProto.NodeState;
import io.kvraft.server.fs.DurableFiles;
import io.kvraft.server.host.RegionHost;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The host's list of the cluster's nodes follows the map's members (and drains), and survives a restart in
 * {@value #FILE}: a node started again applies its replica of the map only once a leader of it answers, and finds one
 * (or learns it was removed) by asking the nodes it last knew; its YAML may name none that is left.
 */
final class KnownNodes {

    private static final Logger LOG = LoggerFactory.getLogger(KnownNodes.class);
    static final String FILE = "KNOWN_NODES";

    private final Path dataDir;
    private final RegionHost host;

    private KnownNodes(Path dataDir, RegionHost host) {
        this.dataDir = dataDir;
        this.host = host;
    }

    /** Tells {@code host} the nodes this node knew when it last ran, if it ran before. */
    static KnownNodes restore(Path dataDir, RegionHost host) {
        List<String> known = read(dataDir);
        if (!known.isEmpty()) {
            host.members(known);
        }
        return new KnownNodes(dataDir, host);
    }

    /** On the map group's apply thread, after every change of the map. */
    void follow(ClusterMap map) {
        List<String> members = new ArrayList<>();
        Set<String> draining = new HashSet<>();
        for (NodeRecord n : map.getNodesList()) {
            if (n.getState() != NodeState.REMOVED) {
                members.add(n.getEndpoint());
            }
            if (n.getState() == NodeState.DRAINING) {
                draining.add(n.getEndpoint());
            }
        }
        host.draining(draining);
        if (!members.isEmpty() && !members.equals(host.peers())) {
            host.members(members);
            write(members);
        }
    }

    private static List<String> read(Path dataDir) {
        Path f = dataDir.resolve(FILE);
        try {
            return Files.exists(f) ? Files.readAllLines(f).stream().map(String::trim).filter(l -> !l.isEmpty()).toList()
                    : List.of();
        } catch (IOException e) {
            LOG.warn("cannot read {}: {}", f, e.toString());
            return List.of();
        }
    }

    private void write(List<String> nodes) {
        try {
            DurableFiles.replace(dataDir.resolve(FILE), String.join("\n", nodes) + "\n");
        } catch (IOException e) {
            LOG.warn("cannot write {}: {}", dataDir.resolve(FILE), e.toString());
        }
    }
}
