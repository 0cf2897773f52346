package io.kvraft.server.metrics;

import com.alipay.sofa.jraft.Node;
import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import com.codahale.metrics.jmx.JmxReporter;
import com.codahale.metrics.jvm.BufferPoolMetricSet;
import com.codahale.metrics.jvm.GarbageCollectorMetricSet;
import com.codahale.metrics.jvm.MemoryUsageGaugeSet;
import io.kvraft.server.config.ServerConfig.MetricsConfig;
import io.kvraft.server.region.Region;
import io.kvraft.server.region.RegionHost;
import io.prometheus.client.CollectorRegistry;
import io.prometheus.client.dropwizard.DropwizardExports;
import io.prometheus.client.dropwizard.samplebuilder.CustomMappingSampleBuilder;
import io.prometheus.client.dropwizard.samplebuilder.MapperConfig;
import io.prometheus.client.exporter.HTTPServer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.function.LongSupplier;
import java.util.function.ToLongFunction;

/**
 * A node's metrics in one Dropwizard registry: KV requests ({@link KvMetrics}), every region's Raft
 * state and timings ({@link RegionMetrics}), node-wide gauges and the JVM (metrics-jvm). Served in the
 * Prometheus text format at {@code http://HOST:PORT/metrics} (metrics.port) through the Prometheus
 * Dropwizard bridge, which turns per-region and per-type names into labels, and over JMX.
 */
public final class NodeMetrics implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(NodeMetrics.class);

    /** Dropwizard names -> Prometheus names and labels; the first match applies, the rest are sanitized. */
    static final List<MapperConfig> MAPPINGS = List.of(
            new MapperConfig("kv.request.*", "kv_request_seconds", Map.of("type", "${0}")),
            new MapperConfig("kv.ops.*", "kv_ops", Map.of("type", "${0}")),
            new MapperConfig("kv.errors.*", "kv_errors", Map.of("code", "${0}")),
            new MapperConfig("kv.region.*.apply", "kv_region_apply_seconds", Map.of("region", "${0}")),
            new MapperConfig("kv.region.*.read_index", "kv_region_read_index_seconds", Map.of("region", "${0}")),
            new MapperConfig("kv.region.*.commit", "kv_region_commit_seconds", Map.of("region", "${0}")),
            new MapperConfig("kv.region.*.*", "kv_region_${1}", Map.of("region", "${0}")),
            new MapperConfig("jvm.gc.*.count", "jvm_gc_collections", Map.of("gc", "${0}")),
            new MapperConfig("jvm.gc.*.time", "jvm_gc_time_ms", Map.of("gc", "${0}")));

    private final MetricRegistry registry = new MetricRegistry();
    private final KvMetrics kv = new KvMetrics();
    private HTTPServer http;
    private JmxReporter jmx;

    public NodeMetrics() {
        kv.register(registry);
        registry.register("jvm.memory", new MemoryUsageGaugeSet());
        registry.register("jvm.gc", new GarbageCollectorMetricSet());
        registry.register("jvm.buffers", new BufferPoolMetricSet(ManagementFactory.getPlatformMBeanServer()));
        registry.register("jvm.threads.count", (Gauge<Integer>) () -> ManagementFactory.getThreadMXBean().getThreadCount());
        registry.register("jvm.uptime_seconds", (Gauge<Long>) () -> ManagementFactory.getRuntimeMXBean().getUptime() / 1000);
    }

    public KvMetrics kv() {
        return kv;
    }

    public MetricRegistry registry() {
        return registry;
    }

    /**
     * Summed over bolt's default request executors (one per protocol version), which run the Raft RPCs
     * other than AppendEntries (those run on the AppendEntries pool, or on jraft's thread per group and
     * leader); -1 if bolt has none registered.
     */
    private static int boltExecutors(java.util.function.ToIntFunction<ThreadPoolExecutor> f) {
        java.util.Set<ThreadPoolExecutor> seen = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        for (byte code : new byte[]{com.alipay.remoting.rpc.protocol.RpcProtocol.PROTOCOL_CODE,
                com.alipay.remoting.rpc.protocol.RpcProtocolV2.PROTOCOL_CODE}) {
            com.alipay.remoting.Protocol p = com.alipay.remoting.ProtocolManager.getProtocol(
                    com.alipay.remoting.ProtocolCode.fromBytes(code));
            if (p != null && p.getCommandHandler() != null
                    && p.getCommandHandler().getDefaultExecutor() instanceof ThreadPoolExecutor t) {
                seen.add(t);
            }
        }
        return seen.isEmpty() ? -1 : seen.stream().mapToInt(f).sum();
    }

    /** Registers the node's and every region's gauges and timers. */
    public void bind(RegionHost host, LongSupplier requestsInFlight) {
        registry.register("kv.node.regions_led", (Gauge<Long>) () -> host.regions().stream().filter(Region::isLeader).count());
        registry.register("kv.node.requests_in_flight", (Gauge<Long>) requestsInFlight::getAsLong);
        registry.register("kv.node.write_ops", (Gauge<Long>) host::writeOps);
        registry.register("kv.node.read_ops", (Gauge<Long>) host::readOps);
        registry.register("kv.node.queued_write_requests",
                (Gauge<Integer>) () -> host.regions().stream().mapToInt(Region::queuedWriteRequests).sum());
        registry.register("kv.node.rpc_executor_queued", (Gauge<Integer>) () -> boltExecutors(e -> e.getQueue().size()));
        registry.register("kv.node.rpc_executor_active", (Gauge<Integer>) () -> boltExecutors(ThreadPoolExecutor::getActiveCount));
        registry.register("kv.node.append_entries_threads", (Gauge<Integer>) host::appendEntriesThreads);
        registry.register("kv.node.append_entries_queued", (Gauge<Integer>) host::appendEntriesQueued);
        registry.register("kv.node.append_entries_received", (Gauge<Long>) host::appendEntriesReceived);
        registry.register("kv.node.queued_reads", (Gauge<Integer>) () -> host.regions().stream().mapToInt(Region::queuedReads).sum());
        for (Region r : host.regions()) {
            String p = "kv.region." + r.id() + ".";
            RegionMetrics m = r.metrics();
            registry.register(p + "leader", (Gauge<Integer>) () -> r.isLeader() ? 1 : 0);
            registry.register(p + "queued_write_requests", (Gauge<Integer>) r::queuedWriteRequests);
            registry.register(p + "queued_reads", (Gauge<Integer>) r::queuedReads);
            registry.register(p + "state", (Gauge<Integer>) () -> r.node() == null ? -1 : r.node().getNodeState().ordinal());
            registry.register(p + "term", (Gauge<Long>) () -> r.info(List.of()).getTerm());
            registry.register(p + "applied_index", (Gauge<Long>) () -> r.info(List.of()).getAppliedIndex());
            registry.register(p + "committed_index", nodeGauge(r, Node::getLastCommittedIndex));
            registry.register(p + "last_log_index", nodeGauge(r, Node::getLastLogIndex));
            registry.register(p + "log_entries_since_snapshot", nodeGauge(r, n -> n.getLastLogIndex() - m.snapshotIndex()));
            registry.register(p + "snapshot_index", (Gauge<Long>) m::snapshotIndex);
            registry.register(p + "snapshot_timestamp_seconds", (Gauge<Long>) () -> m.snapshotMillis() / 1000);
            registry.register(p + "apply", m.apply);
            registry.register(p + "read_index", m.readIndex);
            registry.register(p + "commit", m.commit);
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
            CollectorRegistry prometheus = new CollectorRegistry();
            new DropwizardExports(registry, new CustomMappingSampleBuilder(MAPPINGS)).register(prometheus);
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
