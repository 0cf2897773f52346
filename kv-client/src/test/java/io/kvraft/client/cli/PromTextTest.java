package io.kvraft.client.cli;

import io.kvraft.client.cli.StatusCommand.PromText;
import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

class PromTextTest {

    private static final String TEXT = """
            # TYPE kv_request_seconds histogram
            kv_request_seconds_bucket{type="put",le="0.001",} 50.0
            kv_request_seconds_bucket{type="put",le="0.01",} 90.0
            kv_request_seconds_bucket{type="put",le="0.1",} 100.0
            kv_request_seconds_bucket{type="put",le="+Inf",} 100.0
            kv_request_seconds_bucket{type="get",le="0.001",} 7.0
            kv_request_seconds_bucket{type="get",le="+Inf",} 7.0
            jvm_memory_bytes_used{area="heap",} 1.048576E8
            """;

    @Test
    void when_histogramIsRead_then_bucketsOfThatLabelSetOnlyIncludingInf() {
        TreeMap<Double, Double> put = PromText.buckets(TEXT, "kv_request_seconds", Map.of("type", "put"));
        assertThat(put).containsExactly(Map.entry(0.001, 50.0), Map.entry(0.01, 90.0), Map.entry(0.1, 100.0),
                Map.entry(Double.POSITIVE_INFINITY, 100.0));
    }

    @Test
    void when_quantileFallsInABucket_then_interpolatedLikeHistogramQuantile() {
        TreeMap<Double, Double> put = PromText.buckets(TEXT, "kv_request_seconds", Map.of("type", "put"));
        // rank 99 of 100 lies 9/10 of the way through the (0.01, 0.1] bucket
        assertThat(PromText.quantile(0.99, put)).isCloseTo(0.091, within(1e-9));
        // rank 25 lies half way through the first bucket, which starts at 0
        assertThat(PromText.quantile(0.25, put)).isCloseTo(0.0005, within(1e-9));
    }

    @Test
    void when_noObservations_then_noQuantile() {
        TreeMap<Double, Double> none = new TreeMap<>(Map.of(0.001, 0.0, Double.POSITIVE_INFINITY, 0.0));
        assertThat(PromText.quantile(0.99, none)).isNull();
        assertThat(PromText.quantile(0.99, new TreeMap<>())).isNull();
    }

    @Test
    void when_gaugeIsRead_then_matchedByLabel() {
        assertThat(PromText.value(TEXT, "jvm_memory_bytes_used", Map.of("area", "heap"))).isEqualTo(1.048576E8);
        assertThat(PromText.value(TEXT, "jvm_memory_bytes_used", Map.of("area", "nonheap"))).isNull();
    }
}
