package io.kvraft.common;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.IntStream;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

class CoalescerTest {

    private static final int UNLIMITED = Integer.MAX_VALUE;

    /** Records every batch and holds its {@code done} until the test runs it. */
    private static final class HoldingSender implements Coalescer.Sender<String> {
        final List<List<String>> batches = new CopyOnWriteArrayList<>();
        final List<Runnable> dones = new CopyOnWriteArrayList<>();

        @Override
        public void send(List<String> batch, Runnable done) {
            batches.add(List.copyOf(batch));
            dones.add(done);
        }

        /** Completes the oldest batch whose done has not run yet. */
        void completeNext() {
            dones.remove(0).run();
        }
    }

    private final List<ExecutorService> executors = new ArrayList<>();

    @AfterEach
    void stopExecutors() {
        executors.forEach(ExecutorService::shutdownNow);
    }

    private static Coalescer<String> coalescer(int maxInflight, int maxBatchSize, int maxBatchBytes, int maxPending,
                                               HoldingSender sender) {
        return new Coalescer<>(maxInflight, maxBatchSize, maxBatchBytes, maxPending, String::length, sender);
    }

    @Test
    void when_nothingIsInFlight_then_aSingleItemLeavesAloneAndAtOnce() {
        HoldingSender sender = new HoldingSender();
        Coalescer<String> c = coalescer(1, UNLIMITED, UNLIMITED, UNLIMITED, sender);

        assertThat(c.offer("a")).isTrue();

        assertThat(sender.batches).containsExactly(List.of("a"));
        assertThat(c.pending()).isZero();
    }

    @Test
    void when_everyBatchIsAnsweredAtOnce_then_eachItemLeavesInItsOwnBatch() {
        List<List<String>> batches = new ArrayList<>();
        Coalescer<String> c = new Coalescer<>(1, UNLIMITED, UNLIMITED, UNLIMITED, String::length,
                (batch, done) -> {
                    batches.add(List.copyOf(batch));
                    done.run();
                });

        for (String s : List.of("a", "b", "c")) {
            c.offer(s);
        }

        assertThat(batches).containsExactly(List.of("a"), List.of("b"), List.of("c"));
    }

    @Test
    void when_aBatchIsInFlight_then_laterItemsWaitAndLeaveTogetherWhenItIsDone() {
        HoldingSender sender = new HoldingSender();
        Coalescer<String> c = coalescer(1, UNLIMITED, UNLIMITED, UNLIMITED, sender);
        c.offer("a");

        c.offer("b");
        c.offer("c");
        c.offer("d");

        assertThat(sender.batches).containsExactly(List.of("a"));
        assertThat(c.pending()).isEqualTo(3);

        sender.completeNext();

        assertThat(sender.batches).containsExactly(List.of("a"), List.of("b", "c", "d"));
        assertThat(c.pending()).isZero();

        sender.completeNext();

        assertThat(sender.batches).as("nothing left to send").hasSize(2);
    }

    @Test
    void when_maxInflightIsTwo_then_twoBatchesLeaveBeforeItemsAreHeld() {
        HoldingSender sender = new HoldingSender();
        Coalescer<String> c = coalescer(2, UNLIMITED, UNLIMITED, UNLIMITED, sender);

        c.offer("a");
        c.offer("b");
        c.offer("c");
        c.offer("d");

        assertThat(sender.batches).containsExactly(List.of("a"), List.of("b"));
        assertThat(c.pending()).isEqualTo(2);

        sender.completeNext();

        assertThat(sender.batches).containsExactly(List.of("a"), List.of("b"), List.of("c", "d"));
    }

    static Stream<Arguments> splitCases() {
        return Stream.of(
                // maxBatchSize, maxBatchBytes, sizes of the items queued behind the one in flight, expected batches (sizes)
                Arguments.of(2, UNLIMITED, List.of(1, 1, 1, 1, 1), List.of(List.of(1, 1), List.of(1, 1), List.of(1))),
                Arguments.of(1, UNLIMITED, List.of(1, 2, 3), List.of(List.of(1), List.of(2), List.of(3))),
                Arguments.of(UNLIMITED, 10, List.of(4, 4, 4, 4), List.of(List.of(4, 4), List.of(4, 4))),
                Arguments.of(UNLIMITED, 10, List.of(5, 5, 5), List.of(List.of(5, 5), List.of(5))),
                Arguments.of(UNLIMITED, 10, List.of(3, 20, 3), List.of(List.of(3), List.of(20), List.of(3))),
                Arguments.of(UNLIMITED, 10, List.of(20, 20), List.of(List.of(20), List.of(20))),
                Arguments.of(2, 10, List.of(1, 1, 9, 1, 1), List.of(List.of(1, 1), List.of(9, 1), List.of(1))),
                Arguments.of(3, 6, List.of(2, 2, 2, 2, 1, 1, 1, 1), List.of(List.of(2, 2, 2), List.of(2, 1, 1), List.of(1, 1))));
    }

    @ParameterizedTest(name = "maxBatchSize={0} maxBatchBytes={1} items={2} -> {3}")
    @MethodSource("splitCases")
    void when_queuedItemsExceedTheLimits_then_theyAreSplitIntoBatchesWithinMaxBatchSizeAndMaxBatchBytes(
            int maxBatchSize, int maxBatchBytes, List<Integer> sizes, List<List<Integer>> expectedBatches) {
        HoldingSender sender = new HoldingSender();
        Coalescer<String> c = coalescer(1, maxBatchSize, maxBatchBytes, UNLIMITED, sender);
        c.offer("x");  // in flight; everything else queues behind it
        for (int size : sizes) {
            c.offer("y".repeat(size));
        }

        for (int i = 0; i < expectedBatches.size(); i++) {
            sender.completeNext();
        }
        sender.completeNext();

        List<List<Integer>> sent = sender.batches.stream().skip(1)
                .map(b -> b.stream().map(String::length).toList())
                .toList();
        assertThat(sent).isEqualTo(expectedBatches);
        assertThat(c.pending()).isZero();
    }

    @Test
    void when_maxPendingItemsWait_then_offerIsRefusedUntilABatchLeaves() {
        HoldingSender sender = new HoldingSender();
        Coalescer<String> c = coalescer(1, UNLIMITED, UNLIMITED, 2, sender);
        assertThat(c.offer("a")).as("leaves at once, so it does not count as pending").isTrue();
        assertThat(c.offer("b")).isTrue();
        assertThat(c.offer("c")).isTrue();

        assertThat(c.offer("d")).as("third waiting item over maxPending=2").isFalse();
        assertThat(c.pending()).isEqualTo(2);

        sender.completeNext();

        assertThat(sender.batches).containsExactly(List.of("a"), List.of("b", "c"));
        assertThat(c.offer("d")).isTrue();
        sender.completeNext();
        assertThat(sender.batches).as("the refused item was never queued").containsExactly(
                List.of("a"), List.of("b", "c"), List.of("d"));
    }

    @ParameterizedTest(name = "maxInflight={0} maxBatchSize={1} maxPending={2}")
    @CsvSource({
            // maxInflight, maxBatchSize, maxPending
            "1, 64,   2147483647",
            "2, 64,   2147483647",
            "4, 512,  2147483647",
            "1, 32,   1000",
            "2, 128,  100",
    })
    void when_fourThreadsOfferConcurrently_then_everyItemIsSentExactlyOnce(int maxInflight, int maxBatchSize, int maxPending)
            throws Exception {
        int threads = 4;
        int perThread = 50_000;
        int total = threads * perThread;
        ExecutorService completer = newPool(2);
        ExecutorService producers = newPool(threads);
        AtomicIntegerArray seen = new AtomicIntegerArray(total);
        AtomicLong received = new AtomicLong();
        AtomicInteger inflight = new AtomicInteger();
        AtomicInteger maxObservedInflight = new AtomicInteger();
        AtomicInteger maxObservedBatch = new AtomicInteger();
        int[] lastPerProducer = new int[threads];
        Arrays.fill(lastPerProducer, -1);
        AtomicInteger outOfOrder = new AtomicInteger();

        Coalescer<Integer> c = new Coalescer<>(maxInflight, maxBatchSize, UNLIMITED, maxPending, i -> 8,
                (batch, done) -> {
                    int now = inflight.incrementAndGet();
                    maxObservedInflight.accumulateAndGet(now, Math::max);
                    maxObservedBatch.accumulateAndGet(batch.size(), Math::max);
                    List<Integer> copy = List.copyOf(batch);
                    completer.execute(() -> {
                        for (int item : copy) {
                            seen.incrementAndGet(item);
                            if (maxInflight == 1) {  // batches are then handled strictly one after another
                                int producer = item / perThread;
                                if (item <= lastPerProducer[producer]) {
                                    outOfOrder.incrementAndGet();
                                }
                                lastPerProducer[producer] = item;
                            }
                        }
                        received.addAndGet(copy.size());
                        inflight.decrementAndGet();
                        done.run();
                    });
                });

        List<Future<?>> offers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int base = t * perThread;
            offers.add(producers.submit(() -> {
                for (int i = 0; i < perThread; i++) {
                    while (!c.offer(base + i)) {
                        Thread.onSpinWait();  // back-pressure: try again until there is room
                    }
                }
            }));
        }
        for (Future<?> f : offers) {
            f.get();
        }

        await().atMost(Duration.ofSeconds(60)).until(() -> received.get() >= total && inflight.get() == 0);

        assertThat(received.get()).isEqualTo(total);
        assertThat(IntStream.range(0, total).filter(i -> seen.get(i) != 1).limit(10).boxed().toList())
                .as("items not seen exactly once").isEmpty();
        assertThat(c.pending()).isZero();
        assertThat(maxObservedInflight.get()).isLessThanOrEqualTo(maxInflight);
        assertThat(maxObservedBatch.get()).isLessThanOrEqualTo(maxBatchSize);
        assertThat(outOfOrder.get()).as("items of one producer sent out of order").isZero();
    }

    private ExecutorService newPool(int n) {
        ExecutorService e = Executors.newFixedThreadPool(n);
        executors.add(e);
        return e;
    }
}
