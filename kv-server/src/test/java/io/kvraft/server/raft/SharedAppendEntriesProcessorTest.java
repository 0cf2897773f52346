package io.kvraft.server.raft;

import com.alipay.sofa.jraft.rpc.RpcRequests.AppendEntriesRequest;
import com.alipay.sofa.jraft.rpc.RpcRequests.AppendEntriesRequestHeader;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

class SharedAppendEntriesProcessorTest {

    private final SharedAppendEntriesProcessor processor = new SharedAppendEntriesProcessor(2, 50, 200, 0, "test");

    @AfterEach
    void stop() {
        processor.shutdown();
    }

    private Executor executorOf(int region, String leader) {
        return executorOf(processor, region, leader);
    }

    private static Executor executorOf(SharedAppendEntriesProcessor processor, int region, String leader) {
        AppendEntriesRequestHeader h = AppendEntriesRequestHeader.newBuilder().setGroupId("region-" + region)
                .setPeerId("127.0.0.1:7001").setServerId(leader).build();
        return processor.executorSelector().select(AppendEntriesRequest.class.getName(), h);
    }

    @Test
    void when_aPairSendsAgain_then_itGetsTheSameQueue_andOtherPairsOthers() {
        Executor e = executorOf(1, "127.0.0.1:7002");
        assertThat(executorOf(1, "127.0.0.1:7002")).isSameAs(e);
        assertThat(executorOf(1, "127.0.0.1:7003")).isNotSameAs(e);
        assertThat(executorOf(2, "127.0.0.1:7002")).isNotSameAs(e);
        assertThat(processor.received()).as("one per request, whichever pair").isEqualTo(4);
    }

    @Test
    void when_manyPairsSubmitAtOnce_then_eachPairRunsInOrder_onNoMoreThreadsThanConfigured() {
        // the pool grows when work waits stallMillis; on a loaded machine 12,000 tasks can wait 50 ms without any
        // task blocking, so this processor's stall is one no test waits for: only a blocked thread could grow it
        SharedAppendEntriesProcessor patient = new SharedAppendEntriesProcessor(2, 3_600_000, 200, 0, "test-patient");
        try {
            runManyPairs(patient);
        } finally {
            patient.shutdown();
        }
    }

    private static void runManyPairs(SharedAppendEntriesProcessor processor) {
        Map<String, List<Integer>> seen = new ConcurrentHashMap<>();
        Set<Thread> threads = ConcurrentHashMap.newKeySet();
        int perPair = 500;
        for (int i = 0; i < perPair; i++) {
            for (int region = 1; region <= 24; region++) {
                String pair = "region-" + region;
                int seq = i;
                executorOf(processor, region, "127.0.0.1:7002").execute(() -> {
                    threads.add(Thread.currentThread());
                    seen.computeIfAbsent(pair, p -> new CopyOnWriteArrayList<>()).add(seq);
                });
            }
        }
        await().atMost(60, SECONDS).until(() -> seen.size() == 24 && seen.values().stream().allMatch(l -> l.size() == perPair));
        List<Integer> inOrder = new ArrayList<>();
        for (int i = 0; i < perPair; i++) {
            inOrder.add(i);
        }
        seen.values().forEach(l -> assertThat(l).isEqualTo(inOrder));
        assertThat(threads).hasSizeLessThanOrEqualTo(2);
    }

    @Test
    void when_pairsBlockEveryThread_then_thePoolGrowsSoTheOtherPairsGoOn_andShrinksBackOnceNothingWaits() {
        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch blocked = new CountDownLatch(2);
        Runnable stuck = () -> {
            blocked.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        };
        executorOf(1, "127.0.0.1:7002").execute(stuck);
        executorOf(2, "127.0.0.1:7002").execute(stuck);
        await().atMost(60, SECONDS).until(() -> blocked.getCount() == 0);

        // region 3 keeps sending (as a leader's heartbeats and retries do) while both threads are held
        AtomicInteger threadsWhenRegion3Ran = new AtomicInteger();
        Executor region3 = executorOf(3, "127.0.0.1:7002");
        await().atMost(60, SECONDS).until(() -> {
            region3.execute(() -> threadsWhenRegion3Ran.set(processor.poolThreads()));
            return threadsWhenRegion3Ran.get() > 0;
        });
        assertThat(threadsWhenRegion3Ran.get()).isGreaterThan(2); // the two held threads and one more

        release.countDown();
        Executor region4 = executorOf(4, "127.0.0.1:7002");
        await().atMost(60, SECONDS).until(() -> {
            region4.execute(() -> { });
            return processor.poolThreads() == 2;
        });
    }

    @Test
    void when_noThreadsOrTooManyAreAsked_then_itIsRefused() {
        assertThatThrownBy(() -> new SharedAppendEntriesProcessor(0, 0, "none"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("threads must be 1 to 64, got 0");
        assertThatThrownBy(() -> new SharedAppendEntriesProcessor(65, 0, "many"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("got 65");
    }

    @Test
    void when_aDelayIsSet_then_everyRequestWaitsAtLeastThatLong_andEachPairKeepsItsOrder() {
        SharedAppendEntriesProcessor delayed = new SharedAppendEntriesProcessor(2, 50, 200, 20_000, "delayed");
        try {
            Map<String, List<Integer>> seen = new ConcurrentHashMap<>();
            List<Long> waitedNanos = new CopyOnWriteArrayList<>();
            int perPair = 200;
            for (int i = 0; i < perPair; i++) {
                for (int region = 1; region <= 4; region++) {
                    String pair = "region-" + region;
                    int seq = i;
                    long submitted = System.nanoTime();
                    executorOf(delayed, region, "127.0.0.1:7002").execute(() -> {
                        waitedNanos.add(System.nanoTime() - submitted);
                        seen.computeIfAbsent(pair, p -> new CopyOnWriteArrayList<>()).add(seq);
                    });
                }
            }
            await().atMost(60, SECONDS).until(() -> waitedNanos.size() == 4 * perPair);
            assertThat(waitedNanos).allSatisfy(w -> assertThat(w).isGreaterThanOrEqualTo(20_000_000L));
            List<Integer> inOrder = new ArrayList<>();
            for (int i = 0; i < perPair; i++) {
                inOrder.add(i);
            }
            seen.values().forEach(l -> assertThat(l).isEqualTo(inOrder));
        } finally {
            delayed.shutdown();
        }
    }

    @Test
    void when_theDelayIsNegativeOrOverASecond_then_itIsRefused() {
        assertThatThrownBy(() -> new SharedAppendEntriesProcessor(2, -1, "negative"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("0 to 1000000 us, got -1");
        assertThatThrownBy(() -> RaftRpcServers.delayMicros("1s"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("-Dkv.fault.appendEntriesDelayMicros must be microseconds from 0 to 1000000, got '1s'");
        assertThatThrownBy(() -> RaftRpcServers.delayMicros("2000000"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("got '2000000'");
        assertThat(RaftRpcServers.delayMicros(null)).isZero();
        assertThat(RaftRpcServers.delayMicros(" 500 ")).isEqualTo(500);
    }
}
