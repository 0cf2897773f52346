package io.kvraft.server;

import com.alipay.sofa.jraft.entity.PeerId;
import com.google.protobuf.ByteString;
import io.kvraft.client.KvClient;
import io.kvraft.common.KvException;
import io.kvraft.client.LockHandle;
import io.kvraft.client.LockInfo;
import io.kvraft.client.cli.KvCtl;
import io.kvraft.common.ErrorCode;
import io.kvraft.common.proto.KvProto;
import io.kvraft.common.proto.KvProto.WriteOp;
import io.kvraft.common.proto.KvProto.WriteOpType;
import io.kvraft.common.proto.KvProto.WriteResponse;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;

import static io.kvraft.client.KvClient.sync;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * Distributed locks against three servers with six regions in this JVM, two clients as two holders:
 * exclusion, re-entrance, a watchdog keeping a lock past its lease, a dead holder's lease running out,
 * a lost lock and its typed errors, fencing tokens across a leader transfer and a restart of every node,
 * bad input, and the CLI. Every test uses keys of its own; each leaves all nodes running.
 */
@Timeout(value = 240, unit = SECONDS)
class LockClusterTest {

    @TempDir
    static Path dir;

    static InProcessCluster cluster;
    static KvClient alice;
    static KvClient bob;

    @BeforeAll
    static void start() throws Exception {
        cluster = InProcessCluster.start(3, 6, dir, "memory");
        cluster.awaitBalanced(60);
        alice = cluster.client();
        bob = cluster.client();
    }

    @AfterAll
    static void stop() {
        if (cluster != null) {
            cluster.close();
        }
    }

    @Test
    void when_oneClientHoldsALock_then_anotherCannotTakeItUntilItIsUnlockedAndThenGetsAGreaterToken() {
        byte[] key = bytes("lock/exclusive");
        LockHandle a = sync(alice.tryLock(key, 30_000, 0));
        assertThat(a).isNotNull();
        assertThat(a.isHeld()).isTrue();
        assertThat(sync(bob.tryLock(key, 30_000, 0))).isNull();

        LockInfo info = sync(bob.lockInfo(key));
        assertThat(info.token()).isEqualTo(a.token());
        assertThat(info.count()).isEqualTo(1);
        assertThat(info.leaseLeftMs()).isBetween(1L, 30_000L);
        assertThat(sync(bob.locks(bytes("lock/excl")))).extracting(LockInfo::holder).containsExactly(info.holder());

        sync(a.unlock());
        assertThat(a.isHeld()).isFalse();
        LockHandle b = sync(bob.tryLock(key, 30_000, 0));
        assertThat(b.token()).isGreaterThan(a.token());
        assertThat(sync(alice.lockInfo(key)).holder()).isNotEqualTo(info.holder());
        b.close();
        assertThat(sync(alice.lockInfo(key)).holder()).isEmpty();
    }

    @Test
    void when_theHolderLocksAgain_then_itIsCountedAndFreeOnlyAfterTheLastUnlock() {
        byte[] key = bytes("lock/reentrant");
        LockHandle first = sync(alice.lock(key, 30_000));
        LockHandle second = sync(alice.tryLock(key, 30_000, 0));
        assertThat(second.token()).isEqualTo(first.token());
        assertThat(sync(bob.lockInfo(key)).count()).isEqualTo(2);

        sync(first.unlock());
        assertThat(second.isHeld()).isTrue();
        assertThat(sync(bob.tryLock(key, 30_000, 0))).as("still held once").isNull();
        assertThatThrownBy(() -> sync(first.unlock())).as("a handle unlocked twice")
                .isInstanceOfSatisfying(KvException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT));

        sync(second.unlock());
        LockHandle bobs = sync(bob.tryLock(key, 30_000, 0));
        assertThat(bobs.token()).isEqualTo(first.token() + 1);
        bobs.close();
    }

    @Test
    void when_theHolderLives_then_itsWatchdogKeepsTheLockForManyLeases() {
        byte[] key = bytes("lock/watchdog");
        // 2 s leases: a renewal (every third of a lease) may be late by more than a second in a busy JVM
        LockHandle a = sync(alice.tryLock(key, 2000, 0));
        // bob polls for three leases; alice's renewals keep him out
        assertThat(sync(bob.tryLock(key, 2000, 6000))).isNull();
        assertThat(a.isHeld()).isTrue();
        assertThat(a.lost()).isNotDone();
        sync(a.unlock());
    }

    @Test
    void when_aHolderDiesWithoutUnlocking_then_itsLeaseRunsOutAndAWaiterGetsTheLock() {
        byte[] key = bytes("lock/dead-holder");
        // a holder with no watchdog, as after its JVM died
        WriteResponse taken = send(key, WriteOp.newBuilder().setType(WriteOpType.LOCK_ACQUIRE).setKey(ByteString.copyFrom(key))
                .setHolder(ByteString.copyFromUtf8("ghost")).setLeaseMs(500).build());
        assertThat(taken.getSucceeded(0)).isTrue();
        long ghostToken = taken.getCoord(0).getLock().getToken();

        LockHandle b = sync(bob.tryLock(key, 30_000, 60_000));
        assertThat(b).isNotNull();
        assertThat(b.token()).isGreaterThan(ghostToken);
        b.close();
    }

    @Test
    void when_aHoldersLockIsTakenFromIt_then_itsRenewalIsRefusedItsHandleReportsTheLossAndUnlockIsTyped() {
        byte[] key = bytes("lock/lost");
        LockHandle a = sync(alice.tryLock(key, 3000, 0)); // renewed in time even in a busy JVM
        LockInfo info = sync(bob.lockInfo(key));
        // an operator frees it under alice's name; bob takes it
        WriteResponse freed = send(key, WriteOp.newBuilder().setType(WriteOpType.LOCK_RELEASE).setKey(ByteString.copyFrom(key))
                .setHolder(ByteString.copyFrom(info.holder())).setToken(a.token()).build());
        assertThat(freed.getSucceeded(0)).isTrue();
        LockHandle b = sync(bob.tryLock(key, 30_000, 0));
        assertThat(b).isNotNull();

        await().atMost(30, SECONDS).until(() -> a.lost().isDone());
        assertThat(a.isHeld()).isFalse();
        assertThatThrownBy(() -> sync(a.unlock()))
                .isInstanceOfSatisfying(KvException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.LOCK_NOT_HELD));
        assertThat(b.isHeld()).isTrue();
        b.close();
    }

    @Test
    void when_everyHandleIsGivenUpButTheServersStillCountTheLock_then_theWatchdogStopsAndTheLeaseRunsOut() {
        byte[] key = bytes("lock/given-up");
        LockHandle a = sync(alice.tryLock(key, 3000, 0)); // renewed in time even in a busy JVM
        ByteString holder = ByteString.copyFrom(sync(bob.lockInfo(key)).holder());
        // as when an earlier unlock's outcome was unknown: the servers count one acquisition more than the client
        WriteResponse again = send(key, WriteOp.newBuilder().setType(WriteOpType.LOCK_ACQUIRE).setKey(ByteString.copyFrom(key))
                .setHolder(holder).setLeaseMs(3000).build());
        assertThat(again.getCoord(0).getLock().getCount()).isEqualTo(2);
        sync(a.unlock());
        assertThat(sync(bob.lockInfo(key)).count()).as("still counted once on the servers").isEqualTo(1);

        LockHandle b = sync(bob.tryLock(key, 30_000, 60_000));
        assertThat(b).as("alice's watchdog must not renew a lock she gave up").isNotNull();
        assertThat(b.token()).isGreaterThan(a.token());
        b.close();
    }

    @Test
    void when_someoneElseReleasesOnTheWire_then_itIsRefusedAndTheLockStaysHeld() {
        byte[] key = bytes("lock/non-holder");
        LockHandle a = sync(alice.tryLock(key, 30_000, 0));
        WriteResponse refused = send(key, WriteOp.newBuilder().setType(WriteOpType.LOCK_RELEASE).setKey(ByteString.copyFrom(key))
                .setHolder(ByteString.copyFromUtf8("mallory")).setToken(a.token()).build());
        assertThat(refused.getSucceeded(0)).isFalse();
        assertThat(sync(bob.lockInfo(key)).count()).isEqualTo(1);
        assertThat(a.isHeld()).isTrue();
        a.close();
    }

    @Test
    void when_theLeaderMovesAndEveryNodeRestarts_then_fencingTokensOnlyGrow() throws Exception {
        byte[] key = bytes("lock/tokens");
        LockHandle first = sync(alice.tryLock(key, 30_000, 0));
        first.close();

        int region = cluster.regionOf(key);
        int leader = cluster.leaderOf(region);
        long termBefore = cluster.term(region);
        assertThat(cluster.node(leader).host().region(region).node().transferLeadershipTo(
                PeerId.parsePeer(cluster.node((leader + 1) % 3).config().endpoint())).isOk()).isTrue();
        cluster.awaitNewTerm(region, termBefore);
        LockHandle second = sync(bob.tryLock(key, 30_000, 0));
        assertThat(second.token()).isGreaterThan(first.token());
        second.close();

        for (int i = 0; i < 3; i++) {
            cluster.stopNode(i);
        }
        for (int i = 0; i < 3; i++) {
            cluster.startNode(i);
        }
        await().atMost(60, SECONDS).until(cluster::allRegionsLed);
        LockHandle third = sync(alice.tryLock(key, 30_000, 10_000));
        assertThat(third.token()).isGreaterThan(second.token());
        third.close();
        cluster.awaitBalanced(60);
    }

    @Test
    void when_leaseWaitOrKeyIsAbsurd_then_theCallFailsWithInvalidArgument() {
        byte[] key = bytes("lock/bad");
        List<Runnable> calls = List.of(
                () -> sync(alice.tryLock(key, 0, 0)),
                () -> sync(alice.tryLock(key, -5, 0)),
                () -> sync(alice.tryLock(key, 86_400_001L, 0)),
                () -> sync(alice.tryLock(key, 1000, -1)),
                () -> sync(alice.lock(new byte[0], 1000)),
                () -> sync(alice.lockInfo(new byte[0])));
        for (Runnable call : calls) {
            assertThatThrownBy(call::run)
                    .isInstanceOfSatisfying(KvException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.INVALID_ARGUMENT));
        }
        List<WriteOp> wire = List.of(
                WriteOp.newBuilder().setType(WriteOpType.LOCK_ACQUIRE).setKey(ByteString.copyFrom(key)).setLeaseMs(100).build(),
                WriteOp.newBuilder().setType(WriteOpType.LOCK_ACQUIRE).setKey(ByteString.copyFrom(key))
                        .setHolder(ByteString.copyFrom(new byte[129])).setLeaseMs(100).build(),
                WriteOp.newBuilder().setType(WriteOpType.LOCK_ACQUIRE).setKey(ByteString.copyFrom(key))
                        .setHolder(ByteString.copyFromUtf8("h")).setLeaseMs(-1L).build(),
                WriteOp.newBuilder().setType(WriteOpType.LOCK_RENEW).setKey(ByteString.copyFrom(key))
                        .setHolder(ByteString.copyFromUtf8("h")).setLeaseMs(100).build(),
                WriteOp.newBuilder().setType(WriteOpType.LOCK_RELEASE).setKey(ByteString.copyFrom(key))
                        .setHolder(ByteString.copyFromUtf8("h")).build());
        for (WriteOp op : wire) {
            assertThat(send(key, op).getError().getCode()).as("%s", op).isEqualTo(KvProto.ErrorCode.INVALID_ARGUMENT);
        }
        assertThat(sync(alice.lockInfo(key))).as("nothing was taken").isNull();
    }

    @Test
    void when_theCliListsAndShowsLocks_then_itPrintsHolderTokenAndTimeLeft() {
        byte[] key = bytes("lock/cli");
        LockHandle a = sync(alice.tryLock(key, 60_000, 0));
        String holder = new String(sync(bob.lockInfo(key)).holder(), java.nio.charset.StandardCharsets.UTF_8);

        Run list = cli("lock", "list", "--prefix", "lock/cl");
        assertThat(list.code).as(list.err).isZero();
        assertThat(list.out).startsWith("lock/cli\t" + holder + "\t" + a.token() + "\t1\t");

        Run show = cli("lock", "show", "lock/cli");
        assertThat(show.code).as(show.err).isZero();
        assertThat(show.out).contains("holder: " + holder, "token: " + a.token(), "count: 1", "lease left ms: ");

        Run never = cli("lock", "show", "lock/never");
        assertThat(never.code).isEqualTo(1);
        a.close();
        assertThat(cli("lock", "list", "--prefix", "lock/cli").out).startsWith("lock/cli\t-\t" + a.token() + "\t0\t0");
    }

    record Run(int code, String out, String err) {
    }

    private static Run cli(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        String[] all = new String[args.length + 2];
        all[0] = "--servers";
        all[1] = String.join(",", cluster.endpoints());
        System.arraycopy(args, 0, all, 2, args.length);
        int code = KvCtl.run(all, new PrintWriter(out, true), new PrintWriter(err, true));
        return new Run(code, out.toString(), err.toString());
    }

    /** One op straight to the leader of the key's region, past the client's checks and its holder id. */
    private static WriteResponse send(byte[] key, WriteOp op) {
        return cluster.writeToLeader(cluster.regionOf(key), op);
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
