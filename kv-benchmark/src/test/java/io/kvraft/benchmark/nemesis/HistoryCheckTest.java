package io.kvraft.benchmark.nemesis;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class HistoryCheckTest {

    @Test
    void when_oneKeyOfManyViolates_then_onlyThatKeyIsReportedWithItsSubHistory() {
        List<Op> h = new ArrayList<>();
        long id = 0;
        for (int k = 0; k < 50; k++) {
            String key = "key-" + k;
            h.add(Op.write(id++, key, 1000 + k, 0, 10));
            h.add(Op.read(id++, key, 1000 + k, 20, 30));
        }
        h.add(Op.read(id, "key-7", 0, 40, 50)); // the write of key-7 vanished
        HistoryCheck.Summary s = HistoryCheck.check(h, RegisterCheckerTest.NO_BUDGET);
        assertThat(s.keys()).isEqualTo(50);
        assertThat(s.operations()).isEqualTo(101);
        assertThat(s.violations()).containsOnlyKeys("key-7");
        assertThat(s.undecided()).isEmpty();
        assertThat(s.ok()).isFalse();
        assertThat(s.subHistory("key-7")).hasSize(3).extracting(Op::invokeNs).containsExactly(0L, 20L, 40L);
    }

    @Test
    void when_everyKeyIsLinearizable_then_ok() {
        List<Op> h = new ArrayList<>();
        for (int k = 0; k < 20; k++) {
            for (Op o : RegisterCheckerTest.simulate(new java.util.Random(k), 200, 4, true)) {
                h.add(new Op(k * 1000L + o.id(), o.kind(), "key-" + k, o.value(), o.expect(), o.invokeNs(),
                        o.completeNs(), o.outcome(), o.casApplied(), o.partOf()));
            }
        }
        HistoryCheck.Summary s = HistoryCheck.check(h, RegisterCheckerTest.NO_BUDGET);
        assertThat(s.ok()).isTrue();
        assertThat(s.keys()).isEqualTo(20);
    }
}
