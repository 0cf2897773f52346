package io.kvraft.server.host;

import io.kvraft.server.fs.DurableFiles;
import io.kvraft.server.region.Region;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.kvraft.server.host.RegionLayout.RegionSpec;
import io.kvraft.server.store.KeyRange;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The Raft groups this node hosts, on disk ({@value #FILE} under the node's raft directory): the regions of
 * the initial layout and every region split off one of them since, in the order this node learned of them,
 * less those merged into another since. It says which groups to start at boot and the widest range each has
 * had (its snapshots lie in it); where a region is now (its range and epoch
 * after later splits) is the region's own replicated state, kept by its state machine. Rewritten whole
 * (temp file, fsync, atomic rename) each time a region is added.
 */
public final class RegionCatalog {

    public static final String FILE = "regions.json";
    /** Region ids handed out by splits start here, above every id an initial layout can have. */
    public static final int FIRST_SPLIT_ID = 65_537;

    private static final ObjectMapper JSON = new ObjectMapper()
            .enable(SerializationFeature.INDENT_OUTPUT)
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .setSerializationInclusion(JsonInclude.Include.NON_DEFAULT);

    /**
     * One region as this node first knew it.
     *
     * @param parent    the region it was split off, 0 for the initial layout
     * @param createdAt the parent's log index of the split (or of the parent's snapshot this node learned it from)
     * @param empty     learned from a parent's snapshot, not from applying the split: the group starts with no
     *                  log and no data and gets a snapshot from the region's leader
     * @param peers     the nodes holding the region's replicas (host:port); files written before replicas were
     *                  placed leave it out, and then every node of the cluster holds one
     */
    public record Entry(int id, String start, String end, long epoch, int parent, long createdAt, boolean empty,
                        List<String> peers) {

        public Entry {
            start = start == null ? "" : start; // the file leaves out empty keys (-inf, +inf)
            end = end == null ? "" : end;
            peers = peers == null ? List.of() : List.copyOf(peers);
        }

        KeyRange range() {
            return new KeyRange(HexFormat.of().parseHex(start), HexFormat.of().parseHex(end));
        }

        static Entry of(int id, KeyRange range, long epoch, int parent, long createdAt, boolean empty,
                        List<String> peers) {
            return new Entry(id, HexFormat.of().formatHex(range.start()), HexFormat.of().formatHex(range.end()), epoch,
                    parent, createdAt, empty, peers);
        }

        Entry withPeers(List<String> newPeers) {
            return new Entry(id, start, end, epoch, parent, createdAt, empty, newPeers);
        }
    }

    /**
     * The file's content.
     *
     * @param nodes  the cluster's nodes when the data directory was made (absent in files from before placement)
     * @param factor the replication factor then (0 in those files)
     */
    record Content(int version, List<String> nodes, int factor, List<Entry> regions) {
    }

    private final Path file;
    private final Map<Integer, Entry> entries = new LinkedHashMap<>();
    private List<String> nodes;
    private int factor;

    private RegionCatalog(Path file) {
        this.file = file;
    }

    /** Reads the catalog under {@code raftRoot}, or writes a new one of {@code layout} when there is none. */
    public static RegionCatalog open(Path raftRoot, List<RegionSpec> layout) {
        List<String> all = layout.isEmpty() ? List.of() : layout.get(0).peers();
        return open(raftRoot, layout, null, all, all.size());
    }

    /**
     * Reads the catalog under {@code raftRoot}, or writes a new one with the regions of {@code layout} that have a
     * replica on {@code self} (null: all of them) when there is none.
     *
     * @param nodes  the cluster's nodes as configured now; a catalog made for other nodes or another factor is refused
     * @param factor the replication factor as configured now
     * @throws IllegalStateException when the file is unreadable or was made for another cluster shape
     */
    public static RegionCatalog open(Path raftRoot, List<RegionSpec> layout, String self, List<String> nodes,
                                     int factor) {
        RegionCatalog catalog = new RegionCatalog(raftRoot.resolve(FILE));
        Content content;
        try {
            DurableFiles.createDirectories(raftRoot);
            if (Files.exists(catalog.file)) {
                content = JSON.readValue(catalog.file.toFile(), Content.class);
                if (content.nodes() == null && (content.regions() == null || content.regions().isEmpty())) {
                    throw new IOException("lists no regions"); // a node held every region then
                }
                if (content.regions() == null) { // the file leaves an empty list out: a node that holds no region
                    content = new Content(content.version(), content.nodes(), content.factor(), List.of());
                }
            } else {
                content = null;
                for (RegionSpec spec : layout) {
                    if (self == null || spec.peers().contains(self)) {
                        catalog.entries.put(spec.id(), Entry.of(spec.id(), spec.range(), 1, 0, 0, false, spec.peers()));
                    }
                }
                catalog.nodes = List.copyOf(nodes);
                catalog.factor = factor;
                catalog.write();
            }
        } catch (IOException | RuntimeException e) {
            throw new IllegalStateException("region catalog " + catalog.file + " is unreadable (" + RaftDirs.oneLine(e)
                    + "); refusing to start: it names the regions split off the initial layout. Restore it from a backup"
                    + " of the data directory, or start the node on an empty one", e);
        }
        if (content != null) {
            boolean legacy = content.nodes() == null; // written before replicas were placed: every node held every region
            List<String> madeFor = legacy ? nodes : content.nodes();
            int madeWith = legacy ? nodes.size() : content.factor();
            if (!new java.util.HashSet<>(madeFor).equals(new java.util.HashSet<>(nodes)) || madeWith != factor) {
                throw new IllegalStateException("the data directory of " + catalog.file.getParent().getParent()
                        + " was made for a cluster of " + madeFor + " with replication.factor " + madeWith
                        + ", and the config says " + nodes + " with replication.factor " + factor + ": a cluster's"
                        + " nodes and factor are fixed when its data directories are made; start the node with the"
                        + " cluster.peers and replication.factor it was made with, or on an empty data directory");
            }
            catalog.nodes = List.copyOf(madeFor);
            catalog.factor = madeWith;
            for (Entry e : content.regions()) {
                catalog.entries.put(e.id(), e.peers().isEmpty() ? e.withPeers(madeFor) : e);
            }
            if (legacy) {
                try {
                    catalog.write(); // now with the nodes, the factor and every region's peers
                } catch (IOException e) {
                    throw new UncheckedIOException("cannot write " + catalog.file, e);
                }
            }
        }
        return catalog;
    }

    /**
     * A catalog of a new data directory whose regions are not known yet (the cluster map says whether this node starts
     * the initial layout or rebuilds): nothing is written until {@link #addAll} or {@link #add}.
     */
    public static RegionCatalog pending(Path raftRoot, List<String> nodes, int factor) {
        RegionCatalog catalog = new RegionCatalog(raftRoot.resolve(FILE));
        catalog.nodes = List.copyOf(nodes);
        catalog.factor = factor;
        return catalog;
    }

    /** Adds every entry not listed yet and writes the catalog (also when that adds none) before returning. */
    public synchronized void addAll(List<Entry> added) {
        Map<Integer, Entry> before = new LinkedHashMap<>(entries);
        added.forEach(e -> entries.putIfAbsent(e.id(), e));
        try {
            DurableFiles.createDirectories(file.getParent());
            write();
        } catch (IOException e) {
            entries.clear();
            entries.putAll(before);
            throw new UncheckedIOException("cannot write " + file, e);
        }
    }

    public synchronized List<Entry> entries() {
        return List.copyOf(entries.values());
    }

    public synchronized Entry get(int id) {
        return entries.get(id);
    }

    /** Adds {@code entry} and writes the catalog before returning; a region already listed is left as it is. */
    public synchronized void add(Entry entry) {
        if (entries.putIfAbsent(entry.id(), entry) == null) {
            try {
                write();
            } catch (IOException e) {
                entries.remove(entry.id());
                throw new UncheckedIOException("cannot write " + file, e);
            }
        }
    }

    /**
     * Widens region {@code id}'s listed range to take in {@code range} (a merge), and writes the catalog before
     * returning: the listed range is the widest the region has had, which every snapshot of it lies in.
     */
    public synchronized void widen(int id, KeyRange range) {
        Entry e = entries.get(id);
        if (e == null) {
            return;
        }
        KeyRange now = e.range();
        byte[] start = java.util.Arrays.compareUnsigned(range.start(), now.start()) < 0 ? range.start() : now.start();
        byte[] end = now.end().length == 0 || range.end().length == 0 ? new byte[0]
                : java.util.Arrays.compareUnsigned(range.end(), now.end()) > 0 ? range.end() : now.end();
        Entry wider = Entry.of(id, new KeyRange(start, end), e.epoch(), e.parent(), e.createdAt(), e.empty(), e.peers());
        if (wider.equals(e)) {
            return;
        }
        entries.put(id, wider);
        try {
            write();
        } catch (IOException x) {
            entries.put(id, e);
            throw new UncheckedIOException("cannot write " + file, x);
        }
    }

    /** Records region {@code id}'s voters (a configuration change) and writes the catalog before returning. */
    public synchronized void setPeers(int id, List<String> peers) {
        Entry e = entries.get(id);
        if (e == null || e.peers().equals(peers)) {
            return;
        }
        entries.put(id, e.withPeers(peers));
        try {
            write();
        } catch (IOException x) {
            entries.put(id, e);
            throw new UncheckedIOException("cannot write " + file, x);
        }
    }

    /** Removes region {@code id} (merged into another; its files are gone) and writes the catalog before returning. */
    public synchronized void remove(int id) {
        Entry e = entries.remove(id);
        if (e == null) {
            return;
        }
        try {
            write();
        } catch (IOException x) {
            entries.put(id, e);
            throw new UncheckedIOException("cannot write " + file, x);
        }
    }

    private void write() throws IOException {
        Path tmp = file.resolveSibling(FILE + ".tmp");
        byte[] bytes = JSON.writeValueAsBytes(new Content(2, nodes, factor, new ArrayList<>(entries.values())));
        try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                StandardOpenOption.WRITE)) {
            ch.write(java.nio.ByteBuffer.wrap(bytes));
            ch.force(true);
        }
        try {
            Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (AtomicMoveNotSupportedException e) {
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING);
        }
        try (FileChannel dir = FileChannel.open(file.getParent(), StandardOpenOption.READ)) {
            dir.force(true);
        }
    }
}
