package io.kvraft.client.cli;

import io.kvraft.client.admin.ClusterInfo;
import io.kvraft.client.admin.RoutingKvAdmin;
import io.kvraft.common.KvException;
import io.kvraft.client.config.ClientConfig;
import io.kvraft.common.config.HostPort;
import io.kvraft.common.ErrorCode;
import io.kvraft.common.proto.KvProto;
import io.kvraft.common.proto.KvProto.RegionInfo;
import io.kvraft.common.proto.KvProto.RegionsRequest;
import io.kvraft.common.proto.KvProto.RegionsResponse;
import io.kvraft.common.rpc.Transport;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;

import java.io.PrintWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;

/**
 * {@code status}: one screen about the cluster. Per node: up or down, regions led, write and read
 * rates (two Regions answers {@code --interval-ms} apart), and from the node's Prometheus endpoint
 * (announced in its Regions answer, scraped at both ends of the interval) the p99 latency of the put
 * and get requests of that interval, from the histogram buckets, and the heap. Per region:
 * the leader, the term and each node's role and applied index. Then, when a leader of the cluster map
 * answers, the map's summary and its replica moves in progress (as {@code node list} prints them). Exit 0 when every
 * node is up and every region led, 1 otherwise, 3 when no node answers.
 */
@Command(name = "status", description = "One screen about the cluster: per node up/down, leaders, op rates, p99"
        + " latencies and heap (from its /metrics); per region leader, term, each node's role and applied index;"
        + " then the cluster map's summary (cluster id, nodes, replication.factor, map leader) and the replica moves"
        + " in progress, when the servers keep a cluster map."
        + " Exit code 0 when all nodes are up and all regions led, 1 otherwise, 3 when no node answers.")
final class StatusCommand implements Callable<Integer> {

    @ParentCommand
    KvCtl parent;

    @Option(names = "--interval-ms", defaultValue = "1000", paramLabel = "MS",
            description = "Rates are measured over this long (default: ${DEFAULT-VALUE}).")
    long intervalMs;

    @Option(names = "--timeout-ms", defaultValue = "3000", paramLabel = "MS",
            description = "Wait this long for each node's answer (default: ${DEFAULT-VALUE}).")
    long timeoutMs;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    /** What one node said, or null fields when it did not answer. */
    record NodeView(String endpoint, RegionsResponse first, RegionsResponse second, double seconds, String metricsBefore,
                    String metrics) {
        boolean up() {
            return second != null;
        }
    }

    @Override
    public Integer call() throws Exception {
        if (intervalMs < 0 || timeoutMs <= 0) {
            throw new IllegalArgumentException("--interval-ms must be >= 0 and --timeout-ms positive");
        }
        ClientConfig cfg = parent.clientConfig();
        try (Transport transport = new Transport(parent.clientConfig().tls())) {
            // the nodes: the configured ones and every peer they name
            Set<String> nodes = new LinkedHashSet<>(cfg.servers());
            Map<String, RegionsResponse> first = ask(transport, nodes);
            for (RegionsResponse r : first.values()) {
                for (RegionInfo info : r.getRegionsList()) {
                    nodes.addAll(info.getPeersList());
                }
            }
            first.putAll(ask(transport, missing(nodes, first)));
            if (first.isEmpty()) {
                throw new KvException(ErrorCode.UNAVAILABLE, "no node answered of " + nodes);
            }
            // the cluster map's summary, asked meanwhile; servers without a cluster map just do not answer it
            CompletableFuture<ClusterInfo> map = RoutingKvAdmin.cluster(transport, List.copyOf(nodes), timeoutMs);
            HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofMillis(timeoutMs)).build();
            Map<String, String> before = new TreeMap<>();
            first.forEach((n, r) -> {
                if (r.getMetricsPort() != 0) {
                    before.put(n, scrape(http, n, r.getMetricsPort()));
                }
            });
            long t0 = System.nanoTime();
            Thread.sleep(intervalMs); // the rates and latencies are deltas over this interval
            Map<String, RegionsResponse> second = ask(transport, first.keySet());
            double seconds = Math.max(1e-3, (System.nanoTime() - t0) / 1e9);
            List<NodeView> views = new ArrayList<>();
            for (String n : sortedNodes(nodes)) {
                RegionsResponse s = second.get(n);
                String metrics = s == null || s.getMetricsPort() == 0 ? null : scrape(http, n, s.getMetricsPort());
                views.add(new NodeView(n, first.get(n), s, seconds, before.get(n), metrics));
            }
            int code = print(views, spec.commandLine().getOut());
            ClusterInfo c = map.handle((r, e) -> r).join();
            if (c != null && !c.clusterId().isEmpty()) {
                NodeCommands.summary(c).forEach(spec.commandLine().getOut()::println);
            }
            return code;
        }
    }

    private static List<String> sortedNodes(Set<String> nodes) {
        return nodes.stream().sorted().toList();
    }

    private static Set<String> missing(Set<String> all, Map<String, ?> have) {
        Set<String> m = new LinkedHashSet<>(all);
        m.removeAll(have.keySet());
        return m;
    }

    /** Regions answers of those nodes that give one (in parallel); a node shutting down counts as down. */
    private Map<String, RegionsResponse> ask(Transport transport, Set<String> nodes) {
        Map<String, CompletableFuture<RegionsResponse>> calls = new TreeMap<>();
        for (String n : nodes) {
            calls.put(n, transport.call(n, RegionsRequest.getDefaultInstance(), timeoutMs));
        }
        Map<String, RegionsResponse> answers = new TreeMap<>();
        calls.forEach((n, f) -> {
            try {
                RegionsResponse r = f.join();
                if (!r.hasError() || r.getError().getCode() == KvProto.ErrorCode.OK) {
                    answers.put(n, r);
                }
            } catch (RuntimeException down) {
                // not answering: shown as down
            }
        });
        return answers;
    }

    private String scrape(HttpClient http, String node, int port) {
        String host = HostPort.parse(node).host();
        try {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://" + host + ":" + port + "/metrics"))
                    .timeout(Duration.ofMillis(timeoutMs)).GET().build(), HttpResponse.BodyHandlers.ofString());
            return r.statusCode() == 200 ? r.body() : null;
        } catch (java.io.IOException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }

    static int print(List<NodeView> views, PrintWriter out) {
        int up = 0;
        Map<Integer, RegionInfo> leaders = new TreeMap<>();
        Set<Integer> regionIds = new java.util.TreeSet<>();
        for (NodeView v : views) {
            if (!v.up()) {
                continue;
            }
            up++;
            for (RegionInfo r : v.second().getRegionsList()) {
                regionIds.add(r.getId());
                if (r.getRole().equals("LEADER")) {
                    leaders.put(r.getId(), r);
                }
            }
        }
        out.printf("cluster: %d of %d nodes up, %d regions, %d led%n", up, views.size(), regionIds.size(), leaders.size());
        out.printf("%-3s %-21s %-5s %7s %9s %9s %9s %9s %11s%n",
                "#", "NODE", "STATE", "LEADERS", "WRITES/s", "READS/s", "PUT p99", "GET p99", "HEAP MB");
        for (int i = 0; i < views.size(); i++) {
            NodeView v = views.get(i);
            if (!v.up()) {
                out.printf("%-3d %-21s %-5s%n", i + 1, v.endpoint(), "down");
                continue;
            }
            long led = v.second().getRegionsList().stream().filter(r -> r.getRole().equals("LEADER")).count();
            String writes = "-";
            String reads = "-";
            if (v.first() != null) {
                writes = String.format("%.0f", (v.second().getWriteOps() - v.first().getWriteOps()) / v.seconds());
                reads = String.format("%.0f", (v.second().getReadOps() - v.first().getReadOps()) / v.seconds());
            }
            String m = v.metrics();
            out.printf("%-3d %-21s %-5s %7d %9s %9s %9s %9s %11s%n", i + 1, v.endpoint(), "up", led, writes, reads,
                    p99(v.metricsBefore(), m, "put"), p99(v.metricsBefore(), m, "get"),
                    heap(m));
        }
        out.printf("%-6s %-6s %6s", "REGION", "LEADER", "TERM");
        for (int i = 0; i < views.size(); i++) {
            out.printf("  %-12s", "#" + (i + 1) + " ROLE/APPL");
        }
        out.println();
        for (int id : regionIds) {
            RegionInfo led = leaders.get(id);
            String leader = "-";
            if (led != null) {
                for (int i = 0; i < views.size(); i++) {
                    if (views.get(i).endpoint().equals(led.getLeader())) {
                        leader = "#" + (i + 1);
                    }
                }
            }
            long term = 0;
            StringBuilder cols = new StringBuilder();
            for (NodeView v : views) {
                RegionInfo r = v.up() ? v.second().getRegionsList().stream().filter(x -> x.getId() == id).findFirst().orElse(null)
                        : null;
                if (r == null) {
                    cols.append(String.format("  %-12s", "-"));
                } else {
                    term = Math.max(term, r.getTerm());
                    cols.append(String.format("  %-12s", role(r.getRole()) + " " + r.getAppliedIndex()));
                }
            }
            out.printf("%-6d %-6s %6d%s%n", id, leader, term, cols);
        }
        out.println("roles: L leader, F follower, C candidate, T transferring, E error; p99: the node's requests in the interval");
        if (up == 0) {
            return 3;
        }
        return up == views.size() && leaders.size() == regionIds.size() ? 0 : 1;
    }

    private static String role(String role) {
        return switch (role) {
            case "LEADER" -> "L";
            case "FOLLOWER" -> "F";
            case "CANDIDATE" -> "C";
            case "TRANSFERRING" -> "T";
            case "ERROR" -> "E";
            default -> "?";
        };
    }

    /**
     * The p99 of the node's requests of that type between two scrapes (interpolated within the histogram
     * bucket, as Prometheus's histogram_quantile does), "-" without metrics or without such requests.
     */
    private static String p99(String before, String after, String type) {
        if (after == null) {
            return "-";
        }
        Map<Double, Double> b = PromText.buckets(before, "kv_request_seconds", Map.of("type", type));
        Map<Double, Double> a = PromText.buckets(after, "kv_request_seconds", Map.of("type", type));
        TreeMap<Double, Double> delta = new TreeMap<>();
        a.forEach((le, n) -> delta.put(le, n - b.getOrDefault(le, 0.0)));
        Double seconds = PromText.quantile(0.99, delta);
        return seconds == null ? "-" : String.format("%.1f ms", seconds * 1000);
    }

    private static String heap(String metrics) {
        Double used = PromText.value(metrics, "jvm_memory_bytes_used", Map.of("area", "heap"));
        Double max = PromText.value(metrics, "jvm_memory_bytes_max", Map.of("area", "heap"));
        if (used == null) {
            return "-";
        }
        return String.format("%.0f/%s", used / (1 << 20), max == null || max <= 0 ? "?" : String.format("%.0f", max / (1 << 20)));
    }

    /** Reads one sample out of the Prometheus text format (no library reads it; the format is line-based). */
    static final class PromText {

        private PromText() {
        }

        /** The value of the first sample named {@code name} whose labels include {@code labels}; null if none. */
        static Double value(String text, String name, Map<String, String> labels) {
            List<Map.Entry<Map<String, String>, Double>> all = samples(text, name, labels);
            return all.isEmpty() ? null : all.get(0).getValue();
        }

        /** The cumulative bucket counts of histogram {@code name} by upper bound ({@code le}); empty if none. */
        static TreeMap<Double, Double> buckets(String text, String name, Map<String, String> labels) {
            TreeMap<Double, Double> buckets = new TreeMap<>();
            for (var s : samples(text, name + "_bucket", labels)) {
                String le = s.getKey().get("le");
                buckets.put("+Inf".equals(le) ? Double.POSITIVE_INFINITY : Double.parseDouble(le), s.getValue());
            }
            return buckets;
        }

        /**
         * The q-quantile of cumulative bucket counts, interpolated linearly within its bucket as Prometheus's
         * histogram_quantile does (the highest finite bound when it falls in +Inf); null when no count.
         */
        static Double quantile(double q, TreeMap<Double, Double> buckets) {
            if (buckets.isEmpty() || buckets.lastEntry().getValue() <= 0) {
                return null;
            }
            double rank = q * buckets.lastEntry().getValue();
            double lowerBound = 0;
            double lowerCount = 0;
            for (var b : buckets.entrySet()) {
                if (b.getValue() >= rank) {
                    if (b.getKey().isInfinite()) {
                        return lowerBound;
                    }
                    double inBucket = b.getValue() - lowerCount;
                    return lowerBound + (b.getKey() - lowerBound) * (inBucket <= 0 ? 1 : (rank - lowerCount) / inBucket);
                }
                lowerBound = b.getKey();
                lowerCount = b.getValue();
            }
            return lowerBound;
        }

        private static List<Map.Entry<Map<String, String>, Double>> samples(String text, String name, Map<String, String> labels) {
            List<Map.Entry<Map<String, String>, Double>> found = new ArrayList<>();
            if (text == null) {
                return found;
            }
            for (String line : text.split("\n")) {
                if (line.isEmpty() || line.charAt(0) == '#' || !line.startsWith(name)) {
                    continue;
                }
                int brace = line.indexOf('{');
                int space = line.lastIndexOf(' ');
                String sampleName = brace >= 0 && brace < space ? line.substring(0, brace) : line.substring(0, space);
                if (!sampleName.equals(name)) {
                    continue;
                }
                Map<String, String> have = brace >= 0 && brace < space
                        ? labels(line.substring(brace + 1, line.lastIndexOf('}'))) : Map.of();
                if (have.entrySet().containsAll(labels.entrySet())) {
                    try {
                        found.add(Map.entry(have, Double.parseDouble(line.substring(space + 1).trim())));
                    } catch (NumberFormatException e) {
                        // not a number: not a sample we can use
                    }
                }
            }
            return found;
        }

        private static Map<String, String> labels(String s) {
            Map<String, String> m = new TreeMap<>();
            int i = 0;
            while (i < s.length()) {
                int eq = s.indexOf('=', i);
                if (eq < 0) {
                    break;
                }
                String key = s.substring(i, eq).trim();
                int open = s.indexOf('"', eq);
                StringBuilder v = new StringBuilder();
                int j = open + 1;
                for (; j < s.length() && s.charAt(j) != '"'; j++) {
                    if (s.charAt(j) == '\\' && j + 1 < s.length()) {
                        j++;
                    }
                    v.append(s.charAt(j));
                }
                m.put(key, v.toString());
                i = j + 1;
                while (i < s.length() && (s.charAt(i) == ',' || s.charAt(i) == ' ')) {
                    i++;
                }
            }
            return m;
        }
    }
}
