package io.kvraft.benchmark;

import org.junit.jupiter.api.Test;

import java.util.Arrays;
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

    private static double[] flat(int seconds, double rate) {
        double[] rates = new double[seconds];
        Arrays.fill(rates, rate);
        return rates;
    }

    @Test
    void when_throughputIsFlatFromTheStart_then_warmUpEndsAfterThreeTenSecondBlocks() {
        int[] at = new int[1];
        Optional<String> why = feed(AdaptiveWarmup.defaults(), flat(60, 90_000), at);
        assertThat(at[0]).isEqualTo(30);
        assertThat(why).hasValueSatisfying(s -> assertThat(s).startsWith(
                "throughput stable, the last 10 s within 5% of each of the two 10 s blocks before"));
    }

    @Test
    void when_stable_then_theReasonNamesTheThreeBlocksRatesAndBothChanges() {
        double[] rates = new double[30];
        Arrays.fill(rates, 0, 10, 21_000);
        Arrays.fill(rates, 10, 20, 21_300);
        Arrays.fill(rates, 20, 30, 21_771);
        int[] at = new int[1];
        Optional<String> why = feed(AdaptiveWarmup.defaults(), rates, at);
        assertThat(at[0]).isEqualTo(30);
        assertThat(why).contains("throughput stable, the last 10 s within 5% of each of the two 10 s blocks before"
                + " (last 10 s 21,771 ops/s, the 10 s before 21,300 ops/s (+2.2%), the 10 s before that 21,000 ops/s (+3.7%))");
    }

    @Test
    void when_throughputIsFlatWithNoise_then_warmUpStillEnds() {
        // a loaded machine's seconds jump around: +-3% every other second averages out over each 10 s block
        double[] rates = new double[60];
        for (int s = 0; s < rates.length; s++) {
            rates[s] = 50_000 * (s % 2 == 0 ? 1.03 : 0.97);
        }
        int[] at = new int[1];
        Optional<String> why = feed(AdaptiveWarmup.defaults(), rates, at);
        assertThat(at[0]).isEqualTo(30);
        assertThat(why).hasValueSatisfying(s -> assertThat(s).startsWith("throughput stable"));
    }

    @Test
    void when_throughputClimbsSlowlyLikeAJvmOnTwoCores_then_warmUpWaitsUntilItIsFlat() {
        // +4% per 10 s for 60 s, then flat: each 10 s is within 5% of the 10 s before (the old two-block rule
        // ended here at 20 s), but 8% above the 10 s before that, so only the plateau ends the warm-up
        double[] rates = new double[120];
        for (int s = 0; s < rates.length; s++) {
            rates[s] = 20_000 * Math.pow(1.04, Math.min(s, 60) / 10.0);
        }
        int[] at = new int[1];
        Optional<String> why = feed(AdaptiveWarmup.defaults(), rates, at);
        assertThat(why).hasValueSatisfying(s -> assertThat(s).startsWith("throughput stable"));
        assertThat(at[0]).isGreaterThan(60).isLessThanOrEqualTo(90);
        assertThat(rates[at[0] - 1]).isEqualTo(rates[119]);
    }

    @Test
    void when_throughputKeepsClimbingSlowly_then_warmUpEndsAtTheCapSayingSo() {
        double[] rates = new double[200];
        for (int s = 0; s < rates.length; s++) {
            rates[s] = 20_000 * Math.pow(1.04, s / 10.0); // +4% per 10 s, never flat
        }
        int[] at = new int[1];
        Optional<String> why = feed(AdaptiveWarmup.defaults(), rates, at);
        assertThat(at[0]).isEqualTo(120);
        assertThat(why).hasValueSatisfying(s -> assertThat(s)
                .startsWith("the 120 s cap, throughput not yet stable within 5% (last 10 s ")
                .contains("(+4.0%)", "(+8.2%)"));
    }

    @Test
    void when_throughputKeepsRisingLikeAFreshJvm_then_warmUpWaitsForThePlateau() {
        // 40k rising by 1.5k a second to 95k at about 37 s, then flat: the 30 s a fixed warm-up gave is too early
        // (a rise of 1.5% a second is 15% between two 10 s blocks)
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
        Optional<String> why = feed(new AdaptiveWarmup(3, 0.05, 20), new double[30], at);
        assertThat(at[0]).isEqualTo(20);
        assertThat(why).hasValueSatisfying(s -> assertThat(s).startsWith("the 20 s cap, throughput not yet stable"));
    }

    @Test
    void when_theCapComesBeforeTheWindowIsFull_then_itEndsAtTheCap() {
        // seconds skipped by a late ticker: the elapsed time reaches the cap with fewer rates than the window
        AdaptiveWarmup w = new AdaptiveWarmup(30, 0.05, 30);
        assertThat(w.observe(1, 1_000)).isEmpty();
        assertThat(w.observe(30, 1_000)).contains("the 30 s cap");
    }

    @Test
    void when_theSmallestWindowIsUsed_then_blocksOfOneSecondWork() {
        int[] at = new int[1];
        Optional<String> why = feed(new AdaptiveWarmup(3, 0.05, 20), flat(10, 1_000), at);
        assertThat(at[0]).isEqualTo(3);
        assertThat(why).hasValueSatisfying(s -> assertThat(s).startsWith(
                "throughput stable, the last 1 s within 5% of each of the two 1 s blocks before (last 1 s 1,000 ops/s"));
    }

    @Test
    void when_windowToleranceOrCapIsNonsense_then_refused() {
        // the window must hold three blocks of whole seconds, at least 1 s each
        for (double window : new double[] {0, 1, 2, 2.9, 4, 10, 31, 4.5, -3, Double.NaN}) {
            assertThatThrownBy(() -> new AdaptiveWarmup(window, 0.05, 120))
                    .as("window %s", window).isInstanceOf(IllegalArgumentException.class);
        }
        assertThatThrownBy(() -> new AdaptiveWarmup(30, 0, 120)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new AdaptiveWarmup(30, -0.05, 120)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new AdaptiveWarmup(30, Double.NaN, 120)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new AdaptiveWarmup(30, 0.05, 29)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new AdaptiveWarmup(30, 0.05, Double.NaN)).isInstanceOf(IllegalArgumentException.class);
        assertThat(new AdaptiveWarmup(3, 0.05, 3).maxSeconds()).isEqualTo(3);
        assertThat(AdaptiveWarmup.defaults().maxSeconds()).isEqualTo(120);
    }

    /**
     * Feeds flat throughput and, each second, compiler and total CPU ticks growing by {@code jit[s]} and 100: the
     * compilers' share of the JVMs' CPU in second s+1 is {@code jit[s]}%.
     */
    private static Optional<String> feedWithCompilers(AdaptiveWarmup w, int[] jit, int[] endedAt) {
        long compiler = 0;
        long total = 0;
        for (int s = 0; s < jit.length; s++) {
            compiler += jit[s];
            total += 100;
            Optional<String> why = w.observe(s + 1, 90_000, new CompilerActivity.Sample(compiler, total));
            if (why.isPresent()) {
                endedAt[0] = s + 1;
                return why;
            }
        }
        return Optional.empty();
    }

    @Test
    void when_throughputIsFlatButTheCompilersAreBusy_then_warmUpGoesOnUntilTheyQuietDown() {
        int[] jit = new int[90];
        Arrays.fill(jit, 0, 50, 30); // 30% of the CPU compiling for 50 s, then 2%
        Arrays.fill(jit, 50, 90, 2);
        int[] at = new int[1];
        Optional<String> why = feedWithCompilers(AdaptiveWarmup.defaults(), jit, at);
        // the last 10 s at second 57: 3 s at 30% and 7 at 2%, 10.4%; at second 58: 2 s at 30%, 7.6%, at most 10%
        assertThat(at[0]).isEqualTo(58);
        assertThat(why).hasValueSatisfying(s -> assertThat(s).startsWith("throughput stable")
                .endsWith("; the JIT compilers used 7.6% of the JVMs' CPU in the last 10 s"));
    }

    @Test
    void when_theCompilersStayBusy_then_theCapSaysSo() {
        int[] jit = new int[60];
        Arrays.fill(jit, 20);
        int[] at = new int[1];
        Optional<String> why = feedWithCompilers(new AdaptiveWarmup(30, 0.05, 45), jit, at);
        assertThat(at[0]).isEqualTo(45);
        assertThat(why).hasValueSatisfying(s -> assertThat(s).startsWith("the 45 s cap, throughput stable within 5% but"
                + " the JIT compilers still busy (over 10%)").endsWith("used 20.0% of the JVMs' CPU in the last 10 s"));
    }

    @Test
    void when_theCompilersAreNotKnown_then_throughputAloneDecides() {
        AdaptiveWarmup w = AdaptiveWarmup.defaults();
        Optional<String> why = Optional.empty();
        for (int s = 1; s <= 30 && why.isEmpty(); s++) {
            why = w.observe(s, 90_000, null);
        }
        assertThat(why).hasValueSatisfying(s -> assertThat(s).startsWith("throughput stable").doesNotContain("JIT"));
    }
}
