package io.kvraft.benchmark.nemesis;

import com.google.protobuf.ByteString;
import io.kvraft.client.KvException;
import io.kvraft.client.proto.KvProto.RegionInfo;
import io.kvraft.client.proto.KvProto.RegionsRequest;
import io.kvraft.client.proto.KvProto.RegionsResponse;
import io.kvraft.client.rpc.Transport;

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
 * Nodes get a bounded time to converge (a node that was down may still be learning of a split).
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
     * map they agree on (of the first node's view when they do not), and how long they took to agree.
     */
    record Result(List<String> problems, int nodes, int regions, double seconds) {
        boolean ok() {
            return problems.isEmpty();
        }

        String text() {
            if (ok()) {
                return String.format(java.util.Locale.ROOT, "%d nodes agree on %d regions tiling the key space"
                        + " (after %.1f s)", nodes, regions, seconds);
            }
            return String.format(java.util.Locale.ROOT, "DIFFERS after %.0f s: %s", seconds, String.join("; ", problems));
        }
    }

    /**
     * What is wrong with these views, one line per problem naming the node and the regions; empty when every
     * node answered, each view tiles the key space, and all views hold the same regions.
     */
    static List<String> compare(List<NodeView> views) {
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

    /** Gaps, overlaps and open ends of one node's view. */
    static List<String> tiling(NodeView v) {
        List<String> problems = new ArrayList<>();
        String n = "node " + v.node() + ": ";
        if (v.regions().isEmpty()) {
            problems.add(n + "no regions");
            return problems;
        }
        Comparator<ByteString> keys = (a, b) -> java.util.Arrays.compareUnsigned(a.toByteArray(), b.toByteArray());
        List<Entry> sorted = v.regions().stream().map(Entry::of)
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
        long start = System.nanoTime();
        long deadline = start + limit.toNanos();
        while (true) {
            List<NodeView> views = fetch.get();
            List<String> problems = compare(views);
            double secs = (System.nanoTime() - start) / 1e9;
            if (problems.isEmpty() || System.nanoTime() - deadline >= 0) {
                int regions = views.stream().filter(v -> v.regions() != null).findFirst()
                        .map(v -> v.regions().size()).orElse(0);
                return new Result(problems, views.size(), regions, secs);
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
                if (resp.hasError() && resp.getError().getCode() != io.kvraft.client.proto.KvProto.ErrorCode.OK) {
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
