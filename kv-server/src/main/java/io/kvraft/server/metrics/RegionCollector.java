package io.kvraft.server.metrics;

import io.kvraft.server.region.Region;
import io.prometheus.client.Collector;
import io.prometheus.client.Histogram;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * Every region's latency histograms ({@link RegionMetrics}) as one family per name with a
 * {@code region} label, so a query sums the buckets over regions and nodes.
 */
final class RegionCollector extends Collector {

    private static final List<Function<RegionMetrics, Histogram>> HISTOGRAMS =
            List.of(m -> m.apply, m -> m.readIndex, m -> m.commit);

    private final java.util.function.Supplier<java.util.Collection<Region>> regions;

    private final java.util.function.IntFunction<RegionMetrics> timings;

    /**
     * @param regions the node's regions as they are when scraped (splits add some)
     * @param timings each region's timings, by id
     */
    RegionCollector(java.util.function.Supplier<java.util.Collection<Region>> regions,
                    java.util.function.IntFunction<RegionMetrics> timings) {
        this.regions = regions;
        this.timings = timings;
    }

    @Override
    public List<MetricFamilySamples> collect() {
        Map<String, MetricFamilySamples> families = new LinkedHashMap<>();
        for (Region r : regions.get()) {
            String id = Integer.toString(r.id());
            for (Function<RegionMetrics, Histogram> h : HISTOGRAMS) {
                for (MetricFamilySamples f : h.apply(timings.apply(r.id())).collect()) {
                    List<MetricFamilySamples.Sample> samples = families.computeIfAbsent(f.name,
                            n -> new MetricFamilySamples(f.name, f.unit, f.type, f.help, new ArrayList<>())).samples;
                    for (MetricFamilySamples.Sample s : f.samples) {
                        List<String> names = new ArrayList<>(s.labelNames.size() + 1);
                        List<String> values = new ArrayList<>(s.labelValues.size() + 1);
                        names.add("region");
                        values.add(id);
                        names.addAll(s.labelNames);
                        values.addAll(s.labelValues);
                        samples.add(new MetricFamilySamples.Sample(s.name, names, values, s.value));
                    }
                }
            }
        }
        return new ArrayList<>(families.values());
    }
}
