package io.kvraft.server.metrics;

import com.alipay.sofa.jraft.Node;
import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import com.codahale.metrics.jmx.JmxReporter;
import io.kvraft.server.config.ServerConfig.MetricsConfig;
import io.kvraft.server.region.Region;
import io.kvraft.server.host.RegionHost;
import io.prometheus.client.Collector;
import io.prometheus.client.CollectorRegistry;
import io.prometheus.client.CounterMetricFamily;
import io.prometheus.client.dropwizard.DropwizardExports;
import io.prometheus.client.dropwizard.samplebuilder.CustomMappingSampleBuilder;
import io.prometheus.client.dropwizard.samplebuilder.MapperConfig;
import io.prometheus.client.exporter.HTTPServer;
import io.prometheus.client.hotspot.DefaultExports;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.function.LongSupplier;
import java.util.function.ToLongFunction;

/**
 * A node's metrics, served in the Prometheus text format at {@code http://HOST:PORT/metrics}
 * (metrics.port): KV request histograms and counters ({@link KvMetrics}), every region's latency
 * histograms ({@link RegionCollector}), the node's and regions' state as gauges (kept in a Dropwizard
 * registry, which JMX also serves, and bridged with per-region names turned into labels), the node's
 * cumulative counts as counters, and the standard JVM and process collectors of the Prometheus client
 * ({@code jvm_memory_bytes_used}, {@code jvm_gc_collection_seconds}, {@code process_cpu_seconds_total}, ...).
 */
public final class NodeMetrics implements AutoCloseable {

    /** Each region's timings, by id, made when its replica is created (a replica moved off and back reuses them). */
    private final java.util.Map<Integer, RegionMetrics> regions = new java.util.concurrent.ConcurrentHashMap<>();

    private static final Logger LOG = LoggerFactory.getLogger(NodeMetrics.class);

    /** Dropwizard gauge names -> Prometheus names and labels; the first match applies, the rest are sanitized. */
    static final List<MapperConfig> MAPPINGS = List.of(
            new MapperConfig("kv.region.*.*", "kv_region_${1}", Map.of("region", "${0}")));

    private final MetricRegistry registry = new MetricRegistry();
    private final CollectorRegistry prometheus = new CollectorRegistry();
    private final KvMetrics kv = new KvMetrics();
    private HTTPServer http;
    private JmxReporter jmx;

    public NodeMetrics() {
        kv.register(prometheus);
    }

    public KvMetrics kv() {
        return kv;
    }

    /**
     * Summed over bolt's default request executors (one per protocol version), which run the Raft RPCs
     * other than AppendEntries (those run on the AppendEntries pool, or on jraft's thread per group and
     * leader) and InstallSnapshot (on its own pool); -1 if bolt has none registered.
     */
    private static int boltExecutors(java.util.function.ToIntFunction<ThreadPoolExecutor> f) {
        java.util.Set<ThreadPoolExecutor> pools = io.kvraft.server.metrics.BoltExecutors.defaults();
        return pools.isEmpty() ? -1 : pools.stream().mapToInt(f).sum();
    }

    /** Registers the node's and every region's gauges and timers. */
    public void bind(RegionHost host, LongSupplier requestsInFlight) {
        registry.register("kv.node.regions_led", (Gauge<Long>) () -> host.regions().stream().filter(Region::isLeader).count());
        registry.register("kv.node.regions_quiet", (Gauge<Long>) () -> host.regions().stream().filter(Region::isQuiet).count());
        registry.register("kv.node.requests_in_flight", (Gauge<Long>) requestsInFlight::getAsLong);
        registry.register("kv.node.queued_write_requests",
                (Gauge<Integer>) () -> host.regions().stream().mapToInt(Region::queuedWriteRequests).sum());
        registry.register("kv.node.rpc_executor_queued", (Gauge<Integer>) () -> boltExecutors(e -> e.getQueue().size()));
        registry.register("kv.node.rpc_executor_active", (Gauge<Integer>) () -> boltExecutors(ThreadPoolExecutor::getActiveCount));
        registry.register("kv.node.append_entries_threads", (Gauge<Integer>) host::appendEntriesThreads);
        registry.register("kv.node.append_entries_queued", (Gauge<Integer>) host::appendEntriesQueued);
        registry.register("kv.node.queued_reads", (Gauge<Integer>) () -> host.regions().stream().mapToInt(Region::queuedReads).sum());
        for (Region r : host.regions()) {
            bindRegion(r);
        }
        host.onRegionStarted(this::bindRegion); // regions split off later
        new NodeCounters(host).register(prometheus);
        new RegionCollector(host::regions, this::region).register(prometheus);
    }

    /**
     * The write room: {@code kv_node_store_full} (1 while this node's own heap or disk makes its region leaders refuse
     * writes that add data with STORE_FULL), {@code kv_node_store_heap_fraction} (MemoryDB: the old generation's
     * occupancy after its last collection; null: none) and {@code kv_node_disk_free_bytes} (the data directory's file
     * system; null: not checked).
     */
    public void bindWriteRoom(java.util.function.BooleanSupplier full, java.util.function.DoubleSupplier heapFraction,
                              java.util.function.LongSupplier diskFreeBytes) {
        registry.register("kv.node.store_full", (Gauge<Integer>) () -> full.getAsBoolean() ? 1 : 0);
        if (heapFraction != null) {
            registry.register("kv.node.store_heap_fraction", (Gauge<Double>) heapFraction::getAsDouble);
        }
        if (diskFreeBytes != null) {
            registry.register("kv.node.disk_free_bytes", (Gauge<Long>) diskFreeBytes::getAsLong);
        }
    }

    /** Region {@code id}'s timings on this node (the region layer reports into them). */
    public RegionMetrics region(int id) {
        return regions.computeIfAbsent(id, i -> new RegionMetrics());
    }

    /** Registers one region's gauges. */
    private void bindRegion(Region r) {
        String p = "kv.region." + r.id() + ".";
        // a replica that moved off this node and back: the gauges of the old one (a stopped group) go
        registry.removeMatching(com.codahale.metrics.MetricFilter.startsWith(p));
        RegionMetrics m = region(r.id());
        registry.register(p + "leader", (Gauge<Integer>) () -> r.isLeader() ? 1 : 0);
        registry.register(p + "queued_write_requests", (Gauge<Integer>) r::queuedWriteRequests);
        registry.register(p + "queued_reads", (Gauge<Integer>) r::queuedReads);
        registry.register(p + "state", (Gauge<Integer>) () -> r.node() == null ? -1 : r.node().getNodeState().ordinal());
        registry.register(p + "term", (Gauge<Long>) () -> r.info().getTerm());
        registry.register(p + "applied_index", (Gauge<Long>) () -> r.info().getAppliedIndex());
        registry.register(p + "committed_index", nodeGauge(r, Node::getLastCommittedIndex));
        registry.register(p + "last_log_index", nodeGauge(r, Node::getLastLogIndex));
        registry.register(p + "log_entries_since_snapshot", nodeGauge(r, n -> n.getLastLogIndex() - m.snapshotIndex()));
        registry.register(p + "snapshot_index", (Gauge<Long>) m::snapshotIndex);
        registry.register(p + "snapshot_timestamp_seconds", (Gauge<Long>) () -> m.snapshotMillis() / 1000);
    }

    /** The node's cumulative counts, read from the node when scraped. */
    private static final class NodeCounters extends Collector {
        private final RegionHost host;

        NodeCounters(RegionHost host) {
            this.host = host;
        }

        @Override
        public List<MetricFamilySamples> collect() {
            return List.of(
                    counter("kv_node_write_ops", "Write operations this node counted since start (kv-client status: WRITES/s)", host.writeOps()),
                    counter("kv_node_read_ops", "Read operations this node counted since start (kv-client status: READS/s)", host.readOps()),
                    counter("kv_node_append_entries_received",
                            "AppendEntries received by the follower pool since start, heartbeats included",
                            host.appendEntriesReceived()));
        }

        private static MetricFamilySamples counter(String name, String help, double value) {
            return new CounterMetricFamily(name, help, value);
        }
    }

    private static Gauge<Long> nodeGauge(Region r, ToLongFunction<Node> f) {
        return () -> {
            Node n = r.node();
            try {
                return n == null ? -1L : f.applyAsLong(n);
            } catch (RuntimeException stoppedOrInError) {
                return -1L;
            }
        };
    }

    /**
     * Starts the exporters the config asks for: JMX (domain {@code io.kvraft.HOST-PORT}) and the
     * Prometheus endpoint.
     *
     * @throws IOException when the metrics port cannot be bound
     */
    public void start(MetricsConfig config, String endpoint) throws IOException {
        if (config.jmx()) {
            jmx = JmxReporter.forRegistry(registry).inDomain("io.kvraft." + endpoint.replace(':', '-')).build();
            jmx.start();
        }
        if (config.port() > 0) {
            String host = config.host() != null ? config.host() : endpoint.substring(0, endpoint.lastIndexOf(':'));
            new DropwizardExports(registry, new CustomMappingSampleBuilder(MAPPINGS)).register(prometheus);
            DefaultExports.register(prometheus);
            http = new HTTPServer(new InetSocketAddress(host, config.port()), prometheus, true);
            LOG.info("metrics at http://{}:{}/metrics", host, http.getPort());
        }
    }

    /** The port of the Prometheus endpoint, 0 when it is off. */
    public int httpPort() {
        return http == null ? 0 : http.getPort();
    }

    @Override
    public void close() {
        if (http != null) {
            http.close();
        }
        if (jmx != null) {
            jmx.stop();
        }
    }
}
