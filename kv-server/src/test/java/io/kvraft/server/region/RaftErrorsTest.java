package io.kvraft.server.region;

import com.alipay.sofa.jraft.Status;
import com.alipay.sofa.jraft.error.RaftError;
import io.kvraft.common.proto.KvProto.Error;
import io.kvraft.common.proto.KvProto.ErrorCode;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** How a jraft refusal of a proposal reaches the wire: what the client (and a merge's own steps) retry on. */
class RaftErrorsTest {

    @Test
    void when_jraftRefusesAProposalDuringALeaderTransfer_then_itIsNoLeaderWithoutAHint() {
        // jraft's own words while the node is in STATE_TRANSFERRING, even once the transfer has ended
        Error e = RaftErrors.of(7, new Status(RaftError.EBUSY, "Is transferring leadership."), "127.0.0.1:1", false);
        assertThat(e.getCode()).isEqualTo(ErrorCode.NO_LEADER);
        assertThat(e.getLeaderHint()).isEmpty(); // the old leader names itself until the transfer ends
        assertThat(e.getDetail()).contains("region 7").contains("leadership is moving");

        Error during = RaftErrors.of(7, new Status(RaftError.EBUSY, "anything"), "127.0.0.1:1", true);
        assertThat(during.getCode()).isEqualTo(ErrorCode.NO_LEADER);
    }

    @Test
    void when_jraftRefusesAProposalForAFullQueue_then_itIsBusy_andNotLeaderKeepsItsHint() {
        Error full = RaftErrors.of(7, new Status(RaftError.EBUSY, "Node is busy, has too many tasks."), "127.0.0.1:1",
                false);
        assertThat(full.getCode()).isEqualTo(ErrorCode.BUSY);

        Error notLeader = RaftErrors.of(7, new Status(RaftError.EPERM, "Is not leader."), "127.0.0.1:2", false);
        assertThat(notLeader.getCode()).isEqualTo(ErrorCode.NOT_LEADER);
        assertThat(notLeader.getLeaderHint()).isEqualTo("127.0.0.1:2");
        assertThat(RaftErrors.of(7, new Status(RaftError.EPERM, "Is not leader."), "", false).getCode())
                .isEqualTo(ErrorCode.NO_LEADER);
    }
}
