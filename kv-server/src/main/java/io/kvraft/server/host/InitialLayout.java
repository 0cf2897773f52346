package io.kvraft.server.host;

import io.kvraft.server.fs.DurableFiles;
import io.kvraft.server.config.ServerConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.function.IntConsumer;

/**
 * The node's catalog opened at start, and the initial layout's regions a new data directory holds back until the
 * cluster map answers its registration ({@value #PENDING_FILE} in the raft directory marks that wait). A node that
 * joins a running cluster starts with no region: the cluster moves replicas onto it. One of the cluster's first nodes
 * on a new data directory waits for the map before it makes its regions: a disk wiped and started again at a member's
 * address must not vote in its old regions with an empty log (it could elect a replica that lacks acknowledged
 * writes); its replicas are rebuilt instead.
 */
final class InitialLayout {

    private static final Logger LOG = LoggerFactory.getLogger(InitialLayout.class);
    /** In the raft directory while a new data directory waits for the cluster map before it makes its regions. */
    static final String PENDING_FILE = "LAYOUT_PENDING";

    private final String endpoint;
    private final Path raftRoot;
    private final RegionCatalog catalog;
    /** The initial layout's regions of this node, until the cluster map says to make them ({@link #adopt}). */
    private volatile List<RegionLayout.RegionSpec> pending;

    /** Opens the catalog in {@code raftRoot}, or holds the layout back on a new data directory. */
    InitialLayout(ServerConfig config, Path raftRoot, List<String> peers) {
        this.endpoint = config.endpoint();
        this.raftRoot = raftRoot;
        int factor = config.replicationFactor();
        Path pendingMarker = raftRoot.resolve(PENDING_FILE); // a deferred start that stopped before its map came
        boolean fresh = !Files.exists(raftRoot.resolve(RegionCatalog.FILE))
                && (!RaftDirs.holdsGroups(raftRoot) || Files.exists(pendingMarker));
        if (fresh && !config.cluster().joining()) {
            try {
                DurableFiles.createDirectories(raftRoot);
                DurableFiles.replace(pendingMarker, "regions wait for the cluster map\n");
            } catch (IOException e) {
                throw new UncheckedIOException("cannot write " + pendingMarker, e);
            }
            this.pending = RegionLayout.of(config.cluster(), factor).stream()
                    .filter(spec -> spec.peers().contains(config.endpoint())).toList();
            this.catalog = RegionCatalog.pending(raftRoot, peers, factor);
        } else {
            this.pending = null;
            this.catalog = RegionCatalog.open(raftRoot, config.cluster().joining() ? List.of()
                    : RegionLayout.of(config.cluster(), factor), config.endpoint(), peers, factor);
        }
    }

    RegionCatalog catalog() {
        return catalog;
    }

    /** Whether this node waits for the cluster map before it makes its regions (a new data directory). */
    boolean pending() {
        return pending != null;
    }

    /**
     * Lists the layout's regions in the catalog and starts each with {@code start}, or, with {@code startEmpty} (the map
     * knew this node's address with another data directory), lists none. Either way the catalog is written, so a
     * restart does not ask again. Nothing when no layout is held back.
     */
    void adopt(boolean startEmpty, IntConsumer start) {
        List<RegionLayout.RegionSpec> layout = pending;
        if (layout == null) {
            return;
        }
        if (startEmpty) {
            catalog.addAll(List.of());
            LOG.warn("node {}: the cluster knew this address with another data directory: this one starts with no"
                    + " region, and the cluster rebuilds its {} replicas here from the others", endpoint,
                    layout.size());
        } else {
            catalog.addAll(layout.stream().map(spec -> RegionCatalog.Entry.of(spec.id(), spec.range(), 1, 0, 0, false,
                    spec.peers())).toList());
            for (RegionLayout.RegionSpec spec : layout) {
                start.accept(spec.id());
            }
            LOG.info("node {}: the initial layout's {} regions made", endpoint, layout.size());
        }
        pending = null;
        try {
            Files.deleteIfExists(raftRoot.resolve(PENDING_FILE));
        } catch (IOException e) {
            LOG.warn("cannot remove {}: {}", raftRoot.resolve(PENDING_FILE), e.toString());
        }
    }
}
