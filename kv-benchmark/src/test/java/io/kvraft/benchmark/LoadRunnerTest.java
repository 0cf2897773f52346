package io.kvraft.benchmark;

import io.kvraft.common.ErrorCode;
import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

class LoadRunnerTest {

    private static WorkloadOptions.Builder shortRun() {
        return WorkloadOptions.builder().threads(2).inflight(4).durationSeconds(0.5).warmupSeconds(0)
                .keys(1000).readRatio(0.3).clientId("t").seed(3).drainTimeoutSeconds(10);
    }

    private static RunResult run(WorkloadOptions o, FakeKvClient fake, PrintStream progress) {
        return new LoadRunner(o, fake, KeySpace.of(o), NanoClock.SYSTEM, progress, "").run();
    }

    @Test
    void closedLoopCountsMatchTheClientsOwnCounters() {
        FakeKvClient fake = new FakeKvClient(); // completes in the caller's thread
        RunResult r = run(shortRun().build(), fake, null);
        assertThat(r.ops()).isPositive();
        assertThat(r.puts()).isEqualTo(fake.puts.get());
        assertThat(r.gets()).isEqualTo(fake.gets.get());
        assertThat(r.errorCount()).isZero();
        // read ratio 0.3, within 5 standard deviations of the binomial however few ops a slow machine did
        double tolerance = 5 * Math.sqrt(0.3 * 0.7 / r.ops());
        assertThat((double) r.gets() / r.ops()).isCloseTo(0.3, org.assertj.core.api.Assertions.within(tolerance));
        assertThat(r.unfinished()).isZero();
        assertThat(r.durationSeconds()).isEqualTo(0.5);
    }

    @Test
    void closedLoopWithLatencyAndErrorsCountsEveryOperationOnce() {
        FakeKvClient fake = new FakeKvClient(200, 50, ErrorCode.BUSY); // async, every 50th fails
        ByteArrayOutputStream progress = new ByteArrayOutputStream();
        RunResult r = run(shortRun().durationSeconds(1.2).build(), fake,
                new PrintStream(progress, true, StandardCharsets.UTF_8));
        fake.close();
        assertThat(r.ops() + r.errorCount()).isEqualTo(fake.ops());
        assertThat(r.puts() + r.putErrors()).isEqualTo(fake.puts.get());
        assertThat(r.gets() + r.getErrors()).isEqualTo(fake.gets.get());
        assertThat(r.errors()).containsOnlyKeys("BUSY");
        assertThat(r.errors().get("BUSY")).isEqualTo(fake.injectedErrors.get());
        assertThat(r.putErrors()).isEqualTo(fake.putErrors.get());
        // never more than threads x inflight outstanding: 8 in flight, >= 200 us each
        assertThat(r.totalHistogram().getMinValue()).isGreaterThanOrEqualTo(200);
        assertThat(r.opsRate()).isLessThan(8 / 200e-6);
        String lines = progress.toString(StandardCharsets.UTF_8);
        assertThat(lines).contains("ops/s").contains("errors").contains("p99 so far");
    }

    @Test
    void warmupOperationsAreExcludedFromTheResult() {
        FakeKvClient fake = new FakeKvClient(100, 0, ErrorCode.OK);
        RunResult r = run(shortRun().durationSeconds(0.4).warmupSeconds(0.3).build(), fake, null);
        fake.close();
        assertThat(r.warmupOps()).isPositive();
        assertThat(r.ops() + r.warmupOps()).isEqualTo(fake.ops());
        Histogram hlogPut = ResultFiles.readHlogBytes(r.hlog()).get("put");
        assertThat(hlogPut.getTotalCount()).isEqualTo(r.puts());
    }

    @Test
    void operationsThatNeverCompleteAreCountedAsUnfinishedAfterTheDrainTimeout() {
        FakeKvClient fake = new FakeKvClient(100, 0, ErrorCode.OK);
        fake.stallOp(5);
        RunResult r = run(shortRun().durationSeconds(0.3).drainTimeoutSeconds(0.2).build(), fake, null);
        fake.close();
        assertThat(r.unfinished()).isEqualTo(1);
        assertThat(r.errors()).containsEntry(Results.UNFINISHED, 1L);
        assertThat(r.ops() + 1).isEqualTo(fake.ops());
    }

    @Test
    void openLoopMeasuresFromTheIntendedTimeSoAStallDelaysLaterOps() throws Exception {
        ManualClock clock = new ManualClock();
        FakeKvClient fake = new FakeKvClient(); // completes at once, except op #2
        fake.stallOp(2);
        // 1000 ops/s: op g is due at g ms; one thread with one slot
        WorkloadOptions o = WorkloadOptions.builder().threads(1).inflight(1).rate(1000).durationSeconds(1)
                .warmupSeconds(0).readRatio(0).keys(100).clientId("open").seed(1).drainTimeoutSeconds(5).build();
        CompletableFuture<RunResult> run = CompletableFuture.supplyAsync(
                () -> new LoadRunner(o, fake, KeySpace.of(o), clock, null, "").run());

        await().atMost(Duration.ofSeconds(60)).until(() -> fake.ops() == 1);   // op 0, due at 0
        clock.set(ms(1));
        await().atMost(Duration.ofSeconds(60)).until(() -> fake.ops() == 2);   // op 1, due at 1 ms
        clock.set(ms(2));
        await().atMost(Duration.ofSeconds(60)).until(() -> fake.ops() == 3);   // op 2 stalls
        clock.set(ms(10));
        // ops 3.. are due but the only slot is taken: nothing is sent while op 2 hangs
        await().during(Duration.ofMillis(100)).atMost(Duration.ofSeconds(60)).until(() -> fake.ops() == 3);
        fake.stalled.poll().complete(null);                                     // op 2 done at 10 ms
        // ops 3..10 (due 3..10 ms) go at once, each completing at 10 ms; op 11 is not due yet
        await().atMost(Duration.ofSeconds(60)).until(() -> fake.ops() == 11);
        await().during(Duration.ofMillis(100)).atMost(Duration.ofSeconds(60)).until(() -> fake.ops() == 11);
        clock.set(ms(1000));                                                    // the end: ops 11..999 never sent
        RunResult r = run.get(10, TimeUnit.SECONDS);

        Histogram h = r.putHistogram();
        assertThat(h.getTotalCount()).isEqualTo(11);
        assertThat(h.getCountAtValue(0)).isEqualTo(3);          // ops 0, 1 and 10
        for (long lat = 1; lat <= 8; lat++) {                   // op 2: 8 ms; op 3: 7 ms; ... op 9: 1 ms
            assertThat(h.getCountAtValue(lat * 1000)).as("%d ms", lat).isEqualTo(1);
        }
        assertThat(h.valuesAreEquivalent(h.getMaxValue(), 8000)).isTrue();
        assertThat(r.unsent()).isEqualTo(989);
        assertThat(r.errorCount()).isZero();
    }

    @Test
    void when_theWarmupEnds_then_theMeasuredWindowsStartAndEndAreMarkedOnceEachAtTheirTimes() throws Exception {
        ManualClock clock = new ManualClock();
        FakeKvClient fake = new FakeKvClient();
        // 100 ops/s open loop: 2 s of warm-up, 1 s measured
        WorkloadOptions o = WorkloadOptions.builder().threads(1).inflight(1).rate(100).durationSeconds(1)
                .warmupSeconds(2).readRatio(0).keys(100).clientId("window").seed(1).drainTimeoutSeconds(5).build();
        java.util.concurrent.atomic.AtomicLong startedAtOps = new java.util.concurrent.atomic.AtomicLong(-1);
        java.util.concurrent.atomic.AtomicInteger starts = new java.util.concurrent.atomic.AtomicInteger();
        java.util.concurrent.atomic.AtomicInteger ends = new java.util.concurrent.atomic.AtomicInteger();
        CompletableFuture<RunResult> run = CompletableFuture.supplyAsync(
                () -> new LoadRunner(o, fake, KeySpace.of(o), clock, null, "")
                        .onMeasuredWindow(() -> {
                            starts.incrementAndGet();
                            startedAtOps.set(fake.ops());
                        }, ends::incrementAndGet).run());
        await().atMost(Duration.ofSeconds(60)).until(() -> fake.ops() == 1);
        clock.set(ms(1999));                                    // still warming up: ops 0..199 due
        await().atMost(Duration.ofSeconds(60)).until(() -> fake.ops() == 200);
        await().during(Duration.ofMillis(100)).atMost(Duration.ofSeconds(60)).until(() -> starts.get() == 0);
        clock.set(ms(2000));                                    // the window starts
        await().atMost(Duration.ofSeconds(60)).until(() -> starts.get() == 1);
        assertThat(ends.get()).isZero();
        clock.set(ms(2989));                                    // op 299, the last, is due at 2,990 ms
        await().during(Duration.ofMillis(100)).atMost(Duration.ofSeconds(60)).until(() -> ends.get() == 0);
        clock.set(ms(3000));                                    // the window ends
        RunResult r = run.get(10, TimeUnit.SECONDS);
        assertThat(starts.get()).isEqualTo(1);
        assertThat(ends.get()).isEqualTo(1);
        assertThat(startedAtOps.get()).isBetween(200L, 201L);   // op 200, due at 2 s, may have gone first
        assertThat(r.warmupOps()).isEqualTo(200);
    }

    @Test
    void openLoopSpreadsTheRateOverThreads() throws Exception {
        ManualClock clock = new ManualClock();
        FakeKvClient fake = new FakeKvClient();
        WorkloadOptions o = WorkloadOptions.builder().threads(4).inflight(2).rate(10_000).durationSeconds(1)
                .warmupSeconds(0).readRatio(0.5).keys(100).clientId("open4").seed(1).drainTimeoutSeconds(5).build();
        CompletableFuture<RunResult> run = CompletableFuture.supplyAsync(
                () -> new LoadRunner(o, fake, KeySpace.of(o), clock, null, "").run());
        await().atMost(Duration.ofSeconds(60)).until(() -> fake.ops() == 1);   // started at t0 = 0: op 0 is due
        clock.set(ms(10) - 1);                               // due: ops 0..99 (every 0.1 ms)
        await().atMost(Duration.ofSeconds(60)).until(() -> fake.ops() == 100);
        await().during(Duration.ofMillis(100)).atMost(Duration.ofSeconds(60)).until(() -> fake.ops() == 100);
        clock.set(ms(1000));
        RunResult r = run.get(10, TimeUnit.SECONDS);
        assertThat(r.ops()).isEqualTo(100);
        assertThat(r.unsent()).isEqualTo(10_000 - 100);
    }

    @Test
    void when_theWorkloadScans_then_eachScanAsksForScanLengthKeysFromAKeyOfTheKeySpace() {
        FakeKvClient fake = new FakeKvClient();
        WorkloadOptions o = shortRun().readRatio(0.2).scanRatio(0.5).scanLength(7).keys(50).build();
        KeySpace keys = KeySpace.of(o);
        for (long i = 0; i < keys.size(); i++) {
            fake.map.put(java.nio.ByteBuffer.wrap(keys.keyAt(i)), new byte[]{1});
        }
        RunResult r = new LoadRunner(o, fake, keys, NanoClock.SYSTEM, null, "").run();

        assertThat(r.scans()).isPositive().isEqualTo(fake.scans.get());
        assertThat(fake.scanLimits).isNotEmpty().allMatch(limit -> limit == 7);
        assertThat(fake.scanWithEndOrKeysOnly).as("scan(start, null, length, false)").isFalse();
        // start keys come from the key space of 50 keys: a scan returns 7 keys unless it starts in the last 6
        assertThat(r.scanKeys()).isGreaterThan(0).isLessThanOrEqualTo(7 * r.scans());
        assertThat(r.gets() + r.scans() + r.puts()).isEqualTo(fake.ops());
        // every key is preloaded, so every get hits
        assertThat(r.getHits()).isEqualTo(r.gets());
        assertThat(r.getMisses()).isZero();
        double tolerance = 5 * Math.sqrt(0.5 * 0.5 / r.ops());
        assertThat((double) r.scans() / r.ops()).isCloseTo(0.5, org.assertj.core.api.Assertions.within(tolerance));
    }

    @Test
    void when_getsMissTheKeySpace_then_missesAreCounted() {
        FakeKvClient fake = new FakeKvClient(); // empty: puts fill it as the run goes
        RunResult r = run(shortRun().readRatio(1.0).build(), fake, null);
        assertThat(r.gets()).isPositive();
        assertThat(r.getMisses()).isEqualTo(r.gets());
        assertThat(r.getHits()).isZero();
    }

    @Test
    void when_aReadModeIsSet_then_theLoadRunsOnAViewInThatMode() {
        FakeKvClient fake = new FakeKvClient();
        run(shortRun().readMode("follower").build(), fake, null);
        assertThat(fake.readModesAsked).containsExactly(io.kvraft.client.ReadMode.FOLLOWER);

        FakeKvClient keep = new FakeKvClient();
        run(shortRun().readMode(null).build(), keep, null);
        assertThat(keep.readModesAsked).as("null keeps the client's own mode").isEmpty();
    }

    private static long ms(long millis) {
        return millis * 1_000_000L;
    }
}
