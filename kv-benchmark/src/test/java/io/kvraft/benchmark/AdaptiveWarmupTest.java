package io.kvraft.benchmark;

import org.junit.jupiter.api.Test;

import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class AdaptiveWarmupTest {

    /** Feeds one rate per second from second 1 on; returns the second at which the warm-up ended and why. */
    private static Optional<String> feed(AdaptiveWarmup w, double[] rates, int[] endedAt) {
        for (int s = 0; s < rates.length; s++) {
            Optional<String> why = w.observe(s + 1, rates[s]);
            if (why.isPresent()) {
                endedAt[0] = s + 1;
                return why;
            }
        }
        return Optional.empty();
    }

    @Test
    void when_throughputIsFlatFromTheStart_then_warmUpEndsAfterTwoTenSecondHalves() {
        double[] rates = new double[60];
        java.util.Arrays.fill(rates, 90_000);
        int[] at = new int[1];
        Optional<String> why = feed(AdaptiveWarmup.defaults(), rates, at);
        assertThat(at[0]).isEqualTo(20);
        assertThat(why).hasValueSatisfying(s -> assertThat(s).startsWith("throughput stable, the last 10 s within 5% of the 10 s before"));
    }

    @Test
    void when_throughputKeepsRisingLikeAFreshJvm_then_warmUpWaitsForThePlateau() {
        // 40k rising by 1.5k a second to 95k at about 37 s, then flat: the 30 s a fixed warm-up gave is too early
        // (a rise of 1.5% a second is 15% between two 10 s halves)
        double[] rates = new double[120];
        for (int s = 0; s < rates.length; s++) {
            rates[s] = Math.min(95_000, 40_000 + 1_500 * s);
        }
        int[] at = new int[1];
        Optional<String> why = feed(AdaptiveWarmup.defaults(), rates, at);
        assertThat(why).isPresent();
        assertThat(at[0]).isGreaterThan(37);
        assertThat(rates[at[0] - 1]).isEqualTo(95_000);
    }

    @Test
    void when_throughputNeverSettles_then_warmUpEndsAtTheCapSayingSo() {
        double[] rates = new double[200];
        for (int s = 0; s < rates.length; s++) {
            rates[s] = 10_000 * Math.pow(1.015, s); // 1.5% faster every second: never within 5% over 10 s
        }
        int[] at = new int[1];
        Optional<String> why = feed(AdaptiveWarmup.defaults(), rates, at);
        assertThat(at[0]).isEqualTo(120);
        assertThat(why).hasValueSatisfying(s -> assertThat(s).startsWith("the 120 s cap, throughput not yet stable"));
    }

    @Test
    void when_nothingCompletes_then_notStable() {
        int[] at = new int[1];
        Optional<String> why = feed(new AdaptiveWarmup(4, 0.05, 20), new double[30], at);
        assertThat(at[0]).isEqualTo(20);
        assertThat(why).hasValueSatisfying(s -> assertThat(s).contains("cap"));
    }

    @Test
    void when_windowOrCapIsNonsense_then_refused() {
        assertThatThrownBy(() -> new AdaptiveWarmup(1, 0.05, 120)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new AdaptiveWarmup(10, 0, 120)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new AdaptiveWarmup(10, 0.05, 5)).isInstanceOf(IllegalArgumentException.class);
    }
}
