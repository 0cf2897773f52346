package io.kvraft.server.store;

import org.junit.jupiter.api.Test;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

class HeapGuardTest {

    private final AtomicLong used = new AtomicLong();
    private final AtomicLong now = new AtomicLong();
    private final AtomicInteger collections = new AtomicInteger();
    private final HeapGuard.Heap heap = new HeapGuard.Heap() {
        @Override
        public long usedAfterCollection() {
            return used.get();
        }

        @Override
        public long max() {
            return 1000;
        }

        @Override
        public void collect() {
            collections.incrementAndGet();
        }
    };

    @Test
    void when_theOldGenerationFillsPastTheLimit_then_writesAreRefusedUntilItIsAMarginBelow() {
        HeapGuard guard = new HeapGuard(0.8, heap, now::get);
        used.set(800);
        guard.check();
        assertThat(guard.full()).as("at the limit, not past it").isFalse();

        used.set(801);
        guard.check();
        assertThat(guard.full()).isTrue();
        assertThat(guard.fraction()).isEqualTo(0.801);

        used.set(760); // under the limit, but not by the margin
        guard.check();
        assertThat(guard.full()).isTrue();

        used.set(749);
        guard.check();
        assertThat(guard.full()).isFalse();
    }

    @Test
    void when_full_then_aCollectionIsAskedForEveryTenSecondsSoThatDeletesShow() {
        HeapGuard guard = new HeapGuard(0.8, heap, now::get);
        used.set(900);
        guard.check();
        assertThat(guard.full()).isTrue();
        assertThat(collections).hasValue(0);

        now.addAndGet(TimeUnit.SECONDS.toNanos(10));
        guard.check();
        guard.check();
        assertThat(collections).as("one per ten seconds").hasValue(1);

        used.set(100);
        now.addAndGet(TimeUnit.SECONDS.toNanos(10));
        guard.check();
        assertThat(guard.full()).isFalse();
        now.addAndGet(TimeUnit.SECONDS.toNanos(60));
        guard.check();
        assertThat(collections).as("none while not full").hasValue(1);
    }

    @Test
    void when_theLimitIsOne_then_nothingIsEverRefused() {
        HeapGuard guard = new HeapGuard(1, heap, now::get);
        used.set(1000);
        guard.check();
        assertThat(guard.full()).isFalse();
    }

    @Test
    void when_readFromThisJvm_then_theOldGenerationIsFoundAndMeasuredAfterACollection() {
        HeapGuard.Heap jvm = HeapGuard.jvmHeap();
        assertThat(jvm.max()).isPositive();
        jvm.collect();
        assertThat(jvm.usedAfterCollection()).as("this JVM's classes and objects live on after a full collection")
                .isPositive().isLessThan(jvm.max());
    }
}
