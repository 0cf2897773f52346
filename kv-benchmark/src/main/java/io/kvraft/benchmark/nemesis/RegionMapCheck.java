package io.kvraft.benchmark.nemesis;

import com.google.protobuf.ByteString;
import io.kvraft.common.KvException;
import io.kvraft.common.proto.KvProto.RegionInfo;
import io.kvraft.common.proto.KvProto.RegionsRequest;
import io.kvraft.common.proto.KvProto.RegionsResponse;
import io.kvraft.common.rpc.Transport;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Supplier;

/**
 * The region-map check at the end of a nemesis run: every node, asked for its own regions, must list the same
 * regions (id, start key, end key, epoch), and they must tile the key space: the first starts at the empty key,
 * each next one where the one before ends, the last ends at the empty key (+inf), no gap and no overlap.
 * With more nodes than replicas per region ({@link #compare(List, int)}) each node lists only the regions it holds:
 * then the nodes that list a region must agree on it, no node may list overlapping regions, the regions of all nodes
 * together must tile the key space, and every region must be listed by exactly as many nodes as it has replicas.
 * No region may keep learners (a replica move's, once the moves are done). Nodes get a bounded time to converge (a node
 * that was down may still be learning of a split, a replica moved off it may not be dropped yet, a replica move may be
 * under way, a learner a lost leader's move left is taken out by the next leader after a minute).
 */
final class RegionMapCheck {

    /** How long one node may take to answer. */
    private static final long ANSWER_MS = 2000;

    private RegionMapCheck() {
    }

    /** One node's answer: its regions, or why it gave none. */
    record NodeView(String node, List<RegionInfo> regions, String error) {
        static NodeView of(String node, List<RegionInfo> regions) {
            return new NodeView(node, List.copyOf(regions), null);
        }

        static NodeView failed(String node, String error) {
            return new NodeView(node, null, error);
        }
    }

    /** The part of a region all nodes must agree on. */
    record Entry(int id, ByteString start, ByteString end, long epoch) {
        static Entry of(RegionInfo r) {
            return new Entry(r.getId(), r.getStartKey(), r.getEndKey(), r.getEpoch());
        }

        @Override
        public String toString() {
            return "region " + id + " [" + SplitEvent.printable(start.toByteArray()) + ", "
                    + (end.isEmpty() ? "+inf" : SplitEvent.printable(end.toByteArray())) + ") epoch " + epoch;
        }
    }

    /**
     * The outcome: the problems left at the end (none when it passed), the nodes asked, the regions of the
     * map they agree on (of the first node's view when they do not; of all nodes' views with replicas per region),
     * how long they took to agree, and the replicas per region checked (0: every node holds every region).
     */
    record Result(List<String> problems, int nodes, int regions, double seconds, int replicas) {
        Result(List<String> problems, int nodes, int regions, double seconds) {
            this(problems, nodes, regions, seconds, 0);
        }

        boolean ok() {
            return problems.isEmpty();
        }

        String text() {
            if (ok()) {
                return String.format(java.util.Locale.ROOT, "%d nodes agree on %d regions tiling the key space%s"
                        + " (after %.1f s)", nodes, regions, replicas > 0 ? ", " + replicas + " replicas each" : "",
                        seconds);
            }
            return String.format(java.util.Locale.ROOT, "DIFFERS after %.0f s: %s", seconds, String.join("; ", problems));
        }
    }

    /**
     * What is wrong with these views, one line per problem naming the node and the regions; empty when every
     * node answered, each view tiles the key space, and all views hold the same regions.
     */
    static List<String> compare(List<NodeView> views) {
        return compare(views, 0);
    }

    /**
     * As {@link #compare(List)} with {@code replicas} 0 (every node holds every region); with {@code replicas} > 0
     * (each region on that many of the nodes), what is wrong with these partial views: a node that did not answer,
     * lists a region twice or two overlapping regions; a region that two nodes list differently (range or epoch); a
     * region listed by another number of nodes than {@code replicas}; gaps and overlaps of all the nodes' regions
     * together.
     */
    static List<String> compare(List<NodeView> views, int replicas) {
        List<String> problems = new ArrayList<>(replicas > 0 ? comparePartial(views, replicas) : compareFull(views));
        problems.addAll(learners(views));
        return problems;
    }

    /**
     * Learners still in a region's configuration, one line per region naming them and the nodes that list them. A
     * learner exists only while a replica move runs; one that stays after the run is a move's that nobody took out
     * (its leader lost the leadership mid-move and the next leader did not take it out).
     */
    static List<String> learners(List<NodeView> views) {
        Map<Integer, Map<List<String>, List<String>>> byRegion = new TreeMap<>(); // region -> learners -> nodes
        for (NodeView v : views) {
            if (v.regions() == null) {
                continue;
            }
            for (RegionInfo r : v.regions()) {
                if (r.getLearnersCount() > 0) {
                    byRegion.computeIfAbsent(r.getId(), id -> new LinkedHashMap<>())
                            .computeIfAbsent(r.getLearnersList().stream().sorted().toList(), l -> new ArrayList<>())
                            .add(v.node());
                }
            }
        }
        List<String> problems = new ArrayList<>();
        byRegion.forEach((id, lists) -> lists.forEach((learners, nodes) -> problems.add("region " + id
                + " keeps learners " + learners + " (listed by " + nodes + "): a replica move's, not taken out")));
        return problems;
    }

    private static List<String> compareFull(List<NodeView> views) {
        List<String> problems = new ArrayList<>();
        Map<String, Map<Integer, Entry>> maps = new LinkedHashMap<>();
        for (NodeView v : views) {
            if (v.regions() == null) {
                problems.add("node " + v.node() + ": no answer (" + v.error() + ")");
                continue;
            }
            problems.addAll(tiling(v));
            Map<Integer, Entry> m = new TreeMap<>();
            for (RegionInfo r : v.regions()) {
                m.put(r.getId(), Entry.of(r));
            }
            maps.put(v.node(), m);
        }
        if (maps.size() < 2) {
            return problems;
        }
        // the view most nodes hold is the reference, so the odd node out is the one named
        Map<Map<Integer, Entry>, Integer> votes = new LinkedHashMap<>();
        maps.values().forEach(m -> votes.merge(m, 1, Integer::sum));
        Map<Integer, Entry> ref = votes.entrySet().stream().max(Map.Entry.comparingByValue()).orElseThrow().getKey();
        String refNode = maps.entrySet().stream().filter(e -> e.getValue().equals(ref)).findFirst().orElseThrow().getKey();
        maps.forEach((node, m) -> {
            if (m.equals(ref)) {
                return;
            }
            List<String> diffs = new ArrayList<>();
            for (Entry e : ref.values()) {
                Entry mine = m.get(e.id());
                if (mine == null) {
                    diffs.add("lacks " + e);
                } else if (!mine.equals(e)) {
                    diffs.add("has " + mine + " where node " + refNode + " has " + e);
                }
            }
            for (Entry mine : m.values()) {
                if (!ref.containsKey(mine.id())) {
                    diffs.add("has " + mine + " that node " + refNode + " lacks");
                }
            }
            problems.add("node " + node + " differs from node " + refNode + ": " + String.join(", ", diffs));
        });
        return problems;
    }

    private static List<String> comparePartial(List<NodeView> views, int replicas) {
        List<String> problems = new ArrayList<>();
        // per region id: each node's entry for it, in node order
        Map<Integer, Map<String, Entry>> byId = new TreeMap<>();
        for (NodeView v : views) {
            if (v.regions() == null) {
                problems.add("node " + v.node() + ": no answer (" + v.error() + ")");
                continue;
            }
            problems.addAll(overlaps(v));
            for (RegionInfo r : v.regions()) {
                byId.computeIfAbsent(r.getId(), id -> new LinkedHashMap<>()).putIfAbsent(v.node(), Entry.of(r));
            }
        }
        if (byId.isEmpty()) {
            problems.add("no node lists a region");
            return problems;
        }
        List<RegionInfo> union = new ArrayList<>();
        byId.forEach((id, holders) -> {
            // the entry most holders list is the reference, so the odd node out is the one named
            Map<Entry, Integer> votes = new LinkedHashMap<>();
            holders.values().forEach(e -> votes.merge(e, 1, Integer::sum));
            Entry ref = votes.entrySet().stream().max(Map.Entry.comparingByValue()).orElseThrow().getKey();
            String refNode = holders.entrySet().stream().filter(e -> e.getValue().equals(ref)).findFirst().orElseThrow()
                    .getKey();
            holders.forEach((node, e) -> {
                if (!e.equals(ref)) {
                    problems.add("node " + node + " has " + e + " where node " + refNode + " has " + ref);
                }
            });
            if (holders.size() != replicas) {
                problems.add(ref + " is listed by " + holders.size() + " nodes " + holders.keySet() + ", not by "
                        + replicas);
            }
            union.add(RegionInfo.newBuilder().setId(id).setStartKey(ref.start()).setEndKey(ref.end())
                    .setEpoch(ref.epoch()).build());
        });
        problems.addAll(tiling("the nodes' regions together: ", union));
        return problems;
    }

    /** Regions one node lists twice, and regions of it that overlap (gaps are fine: it holds some regions only). */
    static List<String> overlaps(NodeView v) {
        List<String> problems = new ArrayList<>();
        String n = "node " + v.node() + ": ";
        Comparator<ByteString> keys = (a, b) -> java.util.Arrays.compareUnsigned(a.toByteArray(), b.toByteArray());
        List<Entry> sorted = v.regions().stream().map(Entry::of)
                .sorted(Comparator.comparing(Entry::start, keys).thenComparing(Entry::id)).toList();
        Set<Integer> ids = new java.util.HashSet<>();
        for (int i = 0; i < sorted.size(); i++) {
            Entry e = sorted.get(i);
            if (!ids.add(e.id())) {
                problems.add(n + "region " + e.id() + " listed twice");
            }
            if (i > 0) {
                Entry prev = sorted.get(i - 1);
                if (prev.end().isEmpty() || keys.compare(prev.end(), e.start()) > 0) {
                    problems.add(n + "overlap of " + prev + " and " + e);
                }
            }
        }
        return problems;
    }

    /** Gaps, overlaps and open ends of one node's view. */
    static List<String> tiling(NodeView v) {
        return tiling("node " + v.node() + ": ", v.regions());
    }

    /** Gaps, overlaps and open ends of these regions; each problem starts with {@code n}. */
    private static List<String> tiling(String n, List<RegionInfo> regions) {
        List<String> problems = new ArrayList<>();
        if (regions.isEmpty()) {
            problems.add(n + "no regions");
            return problems;
        }
        Comparator<ByteString> keys = (a, b) -> java.util.Arrays.compareUnsigned(a.toByteArray(), b.toByteArray());
        List<Entry> sorted = regions.stream().map(Entry::of)
                .sorted(Comparator.comparing(Entry::start, keys).thenComparing(Entry::id)).toList();
        Set<Integer> ids = new java.util.HashSet<>();
        for (Entry e : sorted) {
            if (!ids.add(e.id())) {
                problems.add(n + "region " + e.id() + " listed twice");
            }
            if (!e.end().isEmpty() && keys.compare(e.start(), e.end()) >= 0) {
                problems.add(n + e + " is empty or inverted");
            }
        }
        if (!sorted.get(0).start().isEmpty()) {
            problems.add(n + "gap before the first region: " + sorted.get(0) + " does not start at the empty key");
        }
        for (int i = 1; i < sorted.size(); i++) {
            Entry prev = sorted.get(i - 1);
            Entry next = sorted.get(i);
            int c = prev.end().isEmpty() ? 1 : keys.compare(prev.end(), next.start());
            if (c < 0) {
                problems.add(n + "gap between " + prev + " and " + next);
            } else if (c > 0) {
                problems.add(n + "overlap of " + prev + " and " + next);
            }
        }
        Entry last = sorted.get(sorted.size() - 1);
        if (!last.end().isEmpty() && sorted.stream().noneMatch(e -> e.end().isEmpty())) {
            problems.add(n + "gap after the last region: " + last + " does not end at +inf");
        }
        return problems;
    }

    /**
     * Asks for the views until they pass {@link #compare} or {@code limit} has passed, pausing {@code pause}
     * between rounds; the result holds the last round's problems.
     */
    static Result await(Supplier<List<NodeView>> fetch, Duration limit, Duration pause) throws InterruptedException {
        return await(fetch, 0, limit, pause);
    }

    /** As above, for views of {@code replicas} per region (0: every node holds every region); see {@link #compare(List, int)}. */
    static Result await(Supplier<List<NodeView>> fetch, int replicas, Duration limit, Duration pause)
            throws InterruptedException {
        long start = System.nanoTime();
        long deadline = start + limit.toNanos();
        while (true) {
            List<NodeView> views = fetch.get();
            List<String> problems = compare(views, replicas);
            double secs = (System.nanoTime() - start) / 1e9;
            if (problems.isEmpty() || System.nanoTime() - deadline >= 0) {
                int regions = replicas > 0
                        ? (int) views.stream().filter(v -> v.regions() != null)
                        .flatMap(v -> v.regions().stream().map(RegionInfo::getId)).distinct().count()
                        : views.stream().filter(v -> v.regions() != null).findFirst()
                        .map(v -> v.regions().size()).orElse(0);
                return new Result(problems, views.size(), regions, secs, replicas);
            }
            Thread.sleep(pause.toMillis()); // polling interval while the nodes converge
        }
    }

    /** Each node's own view of its regions, asked over {@code transport}. */
    static List<NodeView> fetch(Transport transport, List<String> endpoints) {
        List<NodeView> views = new ArrayList<>();
        for (String ep : endpoints) {
            try {
                RegionsResponse resp = transport.<RegionsResponse>call(ep, RegionsRequest.getDefaultInstance(), ANSWER_MS)
                        .join();
                if (resp.hasError() && resp.getError().getCode() != io.kvraft.common.proto.KvProto.ErrorCode.OK) {
                    views.add(NodeView.failed(ep, resp.getError().getCode() + ": " + resp.getError().getDetail()));
                } else {
                    views.add(NodeView.of(ep, resp.getRegionsList()));
                }
            } catch (RuntimeException e) {
                views.add(NodeView.failed(ep, Objects.requireNonNullElse(KvException.unwrap(e).getMessage(), "no answer")));
            }
        }
        return views;
    }
}
