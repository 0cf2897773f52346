package io.kvraft.server.shape;

import com.alipay.sofa.jraft.Node;
import com.alipay.sofa.jraft.Status;
import com.alipay.sofa.jraft.error.RaftError;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.reflect.Proxy;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/** A configuration change jraft refuses as busy with another is asked again while this node leads, for a while. */
@Timeout(30)
class ReplicaCallsConfBusyTest {

    private final AtomicBoolean leads = new AtomicBoolean(true);
    private final AtomicInteger calls = new AtomicInteger();
    private final Node node = (Node) Proxy.newProxyInstance(Node.class.getClassLoader(), new Class<?>[]{Node.class},
            (proxy, method, args) -> method.getName().equals("isLeader") ? leads.get() : null);

    private static Status busy() {
        return new Status(RaftError.EBUSY, "Doing another configuration change.");
    }

    @Test
    void when_jraftIsBusyTwice_then_theThirdTryIsTaken() {
        Status st = ReplicaCalls.awaitConfChange(node, done -> done.complete(calls.incrementAndGet() <= 2 ? busy() : Status.OK()));
        assertThat(st.isOk()).isTrue();
        assertThat(calls).hasValue(3);
    }

    @Test
    void when_jraftStaysBusy_then_itGivesUpWithTheBusyStatus() {
        Status st = ReplicaCalls.awaitConfChange(node, done -> {
            calls.incrementAndGet();
            done.complete(busy());
        });
        assertThat(st.getRaftError()).isEqualTo(RaftError.EBUSY);
        assertThat(calls.get()).isGreaterThan(1);
    }

    @Test
    void when_theNodeNoLongerLeads_orTheErrorIsAnother_then_itIsNotAskedAgain() {
        leads.set(false);
        assertThat(ReplicaCalls.awaitConfChange(node, done -> {
            calls.incrementAndGet();
            done.complete(busy());
        }).getRaftError()).isEqualTo(RaftError.EBUSY);
        assertThat(calls).hasValue(1);
        leads.set(true);
        assertThat(ReplicaCalls.awaitConfChange(node, done -> {
            calls.incrementAndGet();
            done.complete(new Status(RaftError.EPERM, "Not leader"));
        }).getRaftError()).isEqualTo(RaftError.EPERM);
        assertThat(calls).hasValue(2);
    }
}
