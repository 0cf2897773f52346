package io.kvraft.benchmark.nemesis;

import io.kvraft.benchmark.nemesis.Op.Kind;
import io.kvraft.benchmark.nemesis.RegisterChecker.Verdict;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

class RegisterCheckerTest {

    /**
     * The checker's budget in these tests: none to speak of, so a slow machine cannot turn a verdict into
     * UNDECIDED; the test's own timeout (junit-platform.properties) bounds a search that runs away.
     */
    static final long NO_BUDGET = TimeUnit.HOURS.toNanos(1);

    private static final String K = "k";
    private long ids;

    private Op w(long v, long from, long to) {
        return Op.write(ids++, K, v, from, to);
    }

    private Op r(long v, long from, long to) {
        return Op.read(ids++, K, v, from, to);
    }

    private Op cas(long expect, long v, boolean applied, long from, long to) {
        return Op.cas(ids++, K, expect, v, applied, from, to);
    }

    private Op lostWrite(long v, long from) {
        return Op.unknown(ids++, Kind.WRITE, K, 0, v, from);
    }

    private Op lostCas(long expect, long v, long from) {
        return Op.unknown(ids++, Kind.CAS, K, expect, v, from);
    }

    /** A key's part of a scan that returned it with {@code v}, or did not return it although it covered it (0). */
    private Op scanned(long v, long from, long to) {
        return Op.read(ids++, K, v, from, to).partOf(1000 + ids);
    }

    /** A key's part of an acknowledged range delete. */
    private Op del(long from, long to) {
        return Op.delete(ids++, K, from, to).partOf(2000 + ids);
    }

    private Op lostDelete(long from) {
        return Op.unknown(ids++, Kind.DELETE, K, 0, 0, from).partOf(2000 + ids);
    }

    private static Verdict verdict(Op... ops) {
        return RegisterChecker.check(List.of(ops), System.nanoTime() + NO_BUDGET).verdict();
    }

    @Test
    void when_readsFollowWritesInOrder_then_linearizable() {
        assertThat(verdict(r(0, 0, 1), w(1, 2, 3), r(1, 4, 5), w(2, 6, 7), r(2, 8, 9))).isEqualTo(Verdict.LINEARIZABLE);
    }

    @Test
    void when_aReadAfterAnAcknowledgedWriteSeesTheOldValue_then_violation() {
        assertThat(verdict(w(1, 0, 1), w(2, 2, 3), r(1, 4, 5))).isEqualTo(Verdict.VIOLATION);
    }

    @Test
    void when_aReadOverlapsTheWrite_then_eitherValueIsFine() {
        assertThat(verdict(w(1, 0, 10), r(0, 1, 2), r(1, 3, 4))).isEqualTo(Verdict.LINEARIZABLE);
        ids = 0;
        assertThat(verdict(w(1, 0, 10), r(1, 1, 2), r(0, 3, 4))).as("but not new then old").isEqualTo(Verdict.VIOLATION);
    }

    @Test
    void when_theValueFlipsBackWithoutAWrite_then_violation() {
        // two concurrent writes can be ordered either way, but not both ways
        assertThat(verdict(w(1, 0, 100), w(2, 0, 100), r(1, 10, 11), r(2, 20, 21), r(1, 30, 31)))
                .isEqualTo(Verdict.VIOLATION);
        ids = 0;
        assertThat(verdict(w(1, 0, 100), w(2, 0, 100), r(1, 10, 11), r(2, 20, 21), r(2, 30, 31)))
                .isEqualTo(Verdict.LINEARIZABLE);
    }

    @Test
    void when_aWriteIsAppliedTwice_then_violation() {
        // what a blind client retry of a timed-out put does: its value comes back after a later write
        assertThat(verdict(w(1, 0, 100), w(2, 10, 20), r(1, 5, 6), r(2, 30, 31), r(1, 40, 41)))
                .isEqualTo(Verdict.VIOLATION);
    }

    @Test
    void when_aTimedOutWriteShowsUpLater_then_linearizable() {
        assertThat(verdict(lostWrite(5, 0), r(0, 50, 51), r(5, 100, 101), r(5, 200, 201))).isEqualTo(Verdict.LINEARIZABLE);
    }

    @Test
    void when_aTimedOutWriteNeverShowsUp_then_linearizable() {
        assertThat(verdict(w(1, 0, 1), lostWrite(5, 2), r(1, 50, 51), w(6, 60, 61), r(6, 100, 101)))
                .isEqualTo(Verdict.LINEARIZABLE);
    }

    @Test
    void when_aTimedOutWriteIsSeenAndThenVanishes_then_violation() {
        assertThat(verdict(lostWrite(5, 0), r(5, 50, 51), r(0, 100, 101))).isEqualTo(Verdict.VIOLATION);
    }

    @Test
    void when_casResultsMatchTheValue_then_linearizable() {
        assertThat(verdict(w(1, 0, 1), cas(1, 2, true, 2, 3), cas(1, 3, false, 4, 5), r(2, 6, 7), cas(0, 4, false, 8, 9)))
                .isEqualTo(Verdict.LINEARIZABLE);
        ids = 0;
        assertThat(verdict(cas(0, 1, true, 0, 1), r(1, 2, 3))).as("absent expected").isEqualTo(Verdict.LINEARIZABLE);
    }

    @Test
    void when_aCasSucceedsOnTheWrongValue_then_violation() {
        assertThat(verdict(w(3, 0, 1), cas(1, 2, true, 2, 3))).isEqualTo(Verdict.VIOLATION);
    }

    @Test
    void when_aCasFailsOnTheExpectedValue_then_violation() {
        assertThat(verdict(w(1, 0, 1), cas(1, 2, false, 2, 3))).isEqualTo(Verdict.VIOLATION);
    }

    @Test
    void when_twoCasesBothWinTheSameValue_then_violation() {
        assertThat(verdict(w(1, 0, 1), cas(1, 2, true, 2, 10), cas(1, 3, true, 2, 10))).isEqualTo(Verdict.VIOLATION);
    }

    @Test
    void when_aTimedOutCasMayOrMayNotHaveApplied_then_bothOutcomesAreLinearizable() {
        assertThat(verdict(w(1, 0, 1), lostCas(1, 2, 2), r(2, 50, 51))).isEqualTo(Verdict.LINEARIZABLE);
        ids = 0;
        assertThat(verdict(w(1, 0, 1), lostCas(1, 2, 2), r(1, 50, 51))).isEqualTo(Verdict.LINEARIZABLE);
        ids = 0;
        assertThat(verdict(w(1, 0, 1), lostCas(1, 2, 2), r(1, 50, 51), r(2, 60, 61), r(1, 70, 71)))
                .as("but it applies once").isEqualTo(Verdict.VIOLATION);
        ids = 0;
        assertThat(verdict(w(3, 0, 1), lostCas(1, 2, 2), r(2, 50, 51)))
                .as("and only on its expected value").isEqualTo(Verdict.VIOLATION);
    }

    @Test
    void when_violating_then_theResultNamesWhereTheSearchGotStuck() {
        Op stale = r(1, 4, 5);
        RegisterChecker.Result res = RegisterChecker.check(List.of(w(1, 0, 1), w(2, 2, 3), stale),
                System.nanoTime() + NO_BUDGET);
        assertThat(res.verdict()).isEqualTo(Verdict.VIOLATION);
        assertThat(res.longest()).extracting(Op::value).containsExactly(1L, 2L);
        assertThat(res.stuckAt()).isEqualTo(stale);
    }

    @Test
    void when_aReadReturnsAValueNobodyWrote_then_violation() {
        assertThat(verdict(w(1, 0, 1), r(1, 2, 3), r(77, 4, 5))).isEqualTo(Verdict.VIOLATION);
    }

    @Test
    void when_theBudgetIsSpent_then_undecided() {
        List<Op> ops = simulate(new Random(1), 400, 40, false);
        assertThat(RegisterChecker.check(ops, System.nanoTime() - 1).verdict()).isEqualTo(Verdict.UNDECIDED);
    }

    @ParameterizedTest
    @ValueSource(longs = {1, 2, 3, 4, 5, 6, 7, 8})
    void when_historiesComeFromAnAtomicRegister_then_linearizable_and_aCorruptedReadIsCaught(long seed) {
        List<Op> ops = simulate(new Random(seed), 300, 6, true);
        long deadline = System.nanoTime() + NO_BUDGET;
        assertThat(RegisterChecker.check(ops, deadline).verdict()).isEqualTo(Verdict.LINEARIZABLE);

        // a read that finds the key absent after a write was acknowledged cannot be linearized anywhere; proving
        // a violation means exhausting the search, which timed-out operations make exponential, so this
        // history has none (hand-made ones above cover violations around timed-out operations)
        ops = simulate(new Random(seed), 300, 6, false);
        assertThat(RegisterChecker.check(ops, deadline).verdict()).isEqualTo(Verdict.LINEARIZABLE);
        long firstAck = ops.stream().filter(o -> o.kind() == Kind.WRITE && o.outcome() == Op.Outcome.OK)
                .mapToLong(Op::completeNs).min().orElseThrow();
        List<Op> corrupted = new ArrayList<>(ops);
        for (int i = corrupted.size() / 2; i < corrupted.size(); i++) {
            Op o = corrupted.get(i);
            if (o.kind() == Kind.READ && o.invokeNs() > firstAck) {
                corrupted.set(i, Op.read(o.id(), K, 0, o.invokeNs(), o.completeNs()));
                break;
            }
        }
        assertThat(RegisterChecker.check(corrupted, deadline).verdict()).isEqualTo(Verdict.VIOLATION);
    }

    @Test
    void when_aScanMissesAnAcknowledgedKey_then_violation() {
        assertThat(verdict(w(1, 0, 1), scanned(1, 2, 3), scanned(0, 4, 5))).isEqualTo(Verdict.VIOLATION);
    }

    @Test
    void when_aScanReturnsAKeyACompletedRangeDeleteRemoved_then_violation() {
        assertThat(verdict(w(1, 0, 1), del(2, 3), scanned(1, 4, 5))).isEqualTo(Verdict.VIOLATION);
        ids = 0;
        assertThat(verdict(w(1, 0, 1), del(2, 3), scanned(0, 4, 5), w(2, 6, 7), scanned(2, 8, 9)))
                .as("absent after it, then the next write").isEqualTo(Verdict.LINEARIZABLE);
    }

    @Test
    void when_aScanShowsAValueOlderThanACompletedReadReturned_then_violation() {
        // the write of 2 is still in flight, so the read may see either value, but once it saw 2 nothing later sees 1
        assertThat(verdict(w(1, 0, 1), w(2, 2, 100), r(2, 3, 4), scanned(1, 5, 6))).isEqualTo(Verdict.VIOLATION);
        ids = 0;
        assertThat(verdict(w(1, 0, 1), w(2, 2, 100), scanned(1, 3, 4), r(2, 5, 6)))
                .as("old then new is fine").isEqualTo(Verdict.LINEARIZABLE);
    }

    @Test
    void when_aScanOverlapsARangeDelete_then_presentOrAbsentIsFine() {
        assertThat(verdict(w(1, 0, 1), del(2, 10), scanned(1, 3, 4), scanned(0, 5, 6))).isEqualTo(Verdict.LINEARIZABLE);
        ids = 0;
        assertThat(verdict(w(1, 0, 1), del(2, 10), scanned(0, 3, 4), scanned(1, 5, 6)))
                .as("but not absent then back").isEqualTo(Verdict.VIOLATION);
    }

    @Test
    void when_theKeyIsDeletedAndWrittenManyTimes_then_eachDeleteMakesItAbsentOnce() {
        assertThat(verdict(w(1, 0, 1), del(2, 3), r(0, 4, 5), w(2, 6, 7), r(2, 8, 9), del(10, 11), scanned(0, 12, 13),
                cas(0, 3, true, 14, 15), del(16, 17), cas(3, 4, false, 18, 19), r(0, 20, 21)))
                .isEqualTo(Verdict.LINEARIZABLE);
        ids = 0;
        assertThat(verdict(w(1, 0, 1), del(2, 3), w(2, 6, 7), cas(0, 3, true, 14, 15)))
                .as("a CAS expecting absent after a later write").isEqualTo(Verdict.VIOLATION);
    }

    @Test
    void when_aTimedOutRangeDeleteShowsUpLaterOrNever_then_linearizable() {
        assertThat(verdict(w(1, 0, 1), lostDelete(2), r(1, 50, 51), scanned(0, 100, 101), r(0, 200, 201)))
                .isEqualTo(Verdict.LINEARIZABLE);
        ids = 0;
        assertThat(verdict(w(1, 0, 1), lostDelete(2), r(1, 50, 51), w(2, 60, 61), scanned(2, 100, 101)))
                .isEqualTo(Verdict.LINEARIZABLE);
    }

    @Test
    void when_oneTimedOutRangeDeleteWouldHaveToApplyTwice_then_violation() {
        assertThat(verdict(w(1, 0, 1), lostDelete(2), scanned(0, 5, 6), w(2, 10, 11), r(0, 20, 21)))
                .isEqualTo(Verdict.VIOLATION);
        ids = 0;
        assertThat(verdict(w(1, 0, 1), lostDelete(2), scanned(0, 5, 6), w(2, 10, 11), lostDelete(12), r(0, 20, 21)))
                .as("two of them may").isEqualTo(Verdict.LINEARIZABLE);
        ids = 0;
        assertThat(verdict(w(1, 0, 1), lostDelete(2), scanned(0, 5, 6), scanned(1, 7, 8)))
                .as("nor may the value come back after it").isEqualTo(Verdict.VIOLATION);
    }

    @Test
    void when_aTimedOutRangeDeleteExplainsAFailedCas_then_linearizable() {
        // nobody saw the key absent; only the CAS's failure says the delete applied
        assertThat(verdict(w(1, 0, 1), lostDelete(2), cas(1, 5, false, 10, 11))).isEqualTo(Verdict.LINEARIZABLE);
        ids = 0;
        assertThat(verdict(w(1, 0, 1), cas(1, 5, false, 10, 11))).isEqualTo(Verdict.VIOLATION);
    }

    @ParameterizedTest
    @ValueSource(longs = {1, 2, 3, 4, 5, 6, 7, 8})
    void when_historiesWithDeletesComeFromAnAtomicRegister_then_linearizable_and_aReadOfADeletedValueIsCaught(long seed) {
        long deadline = System.nanoTime() + NO_BUDGET;
        List<Op> ops = simulate(new Random(seed), 300, 6, true, true);
        assertThat(ops).anyMatch(o -> o.kind() == Kind.DELETE && o.outcome() == Op.Outcome.UNKNOWN);
        assertThat(RegisterChecker.check(ops, deadline).verdict()).isEqualTo(Verdict.LINEARIZABLE);

        // a read returning the value of an acknowledged write that an acknowledged delete followed, both
        // before the read was invoked: put values are unique, so nothing can have brought it back
        ops = simulate(new Random(seed), 300, 6, false, true);
        assertThat(RegisterChecker.check(ops, deadline).verdict()).isEqualTo(Verdict.LINEARIZABLE);
        List<Op> corrupted = new ArrayList<>(ops);
        boolean done = false;
        for (int i = corrupted.size() / 2; i < corrupted.size() && !done; i++) {
            Op read = corrupted.get(i);
            for (Op d : ops) {
                if (done || read.kind() != Kind.READ || d.kind() != Kind.DELETE || d.completeNs() >= read.invokeNs()) {
                    continue;
                }
                for (Op w : ops) {
                    if (w.kind() == Kind.WRITE && w.completeNs() < d.invokeNs() && w.value() != read.value()) {
                        corrupted.set(i, Op.read(read.id(), K, w.value(), read.invokeNs(), read.completeNs()));
                        done = true;
                        break;
                    }
                }
            }
        }
        assertThat(done).isTrue();
        assertThat(RegisterChecker.check(corrupted, deadline).verdict()).isEqualTo(Verdict.VIOLATION);
    }

    /**
     * A history of {@code count} operations by {@code clients} clients on an atomic register: each
     * operation takes effect at one instant inside its interval, some writes and CASes time out
     * (and apply or not).
     */
    static List<Op> simulate(Random rnd, int count, int clients, boolean withUnknown) {
        return simulate(rnd, count, clients, withUnknown, false);
    }

    /** As above; with {@code withDeletes}, a share of the writes are deletes (absent, written many times). */
    static List<Op> simulate(Random rnd, int count, int clients, boolean withUnknown, boolean withDeletes) {
        long value = 0;
        long nextValue = 1;
        long[] clientFree = new long[clients];
        List<Op> ops = new ArrayList<>();
        long now = 0;
        for (int i = 0; i < count; i++) {
            now += 1 + rnd.nextInt(5);                      // the instant this operation takes effect
            int c = rnd.nextInt(clients);
            long invoke = Math.max(clientFree[c], now - 1 - rnd.nextInt(20));
            if (invoke > now) {
                invoke = now;
            }
            long complete = now + 1 + rnd.nextInt(20);
            clientFree[c] = complete + 1;
            int kind = rnd.nextInt(10);
            if (withDeletes && kind >= 5 && rnd.nextInt(3) == 0) {
                if (withUnknown && rnd.nextInt(5) == 0) {
                    if (rnd.nextBoolean()) {
                        value = 0;
                    }
                    ops.add(Op.unknown(i, Kind.DELETE, K, 0, 0, invoke));
                } else {
                    value = 0;
                    ops.add(Op.delete(i, K, invoke, complete));
                }
            } else if (kind < 5) {
                ops.add(Op.read(i, K, value, invoke, complete));
            } else if (kind < 8) {
                long v = nextValue++;
                if (withUnknown && rnd.nextInt(10) == 0) {
                    boolean applied = rnd.nextBoolean();
                    if (applied) {
                        value = v;
                    }
                    ops.add(Op.unknown(i, Kind.WRITE, K, 0, v, invoke));
                } else {
                    value = v;
                    ops.add(Op.write(i, K, v, invoke, complete));
                }
            } else {
                long expect = rnd.nextBoolean() ? value : Math.max(0, value - 1);
                long v = nextValue++;
                boolean matches = expect == value;
                if (withUnknown && rnd.nextInt(10) == 0) {
                    if (matches && rnd.nextBoolean()) {
                        value = v;
                    }
                    ops.add(Op.unknown(i, Kind.CAS, K, expect, v, invoke));
                } else {
                    if (matches) {
                        value = v;
                    }
                    ops.add(Op.cas(i, K, expect, v, matches, invoke, complete));
                }
            }
        }
        return ops;
    }
}
