package io.kvraft.server.region;

import com.alipay.sofa.jraft.Status;
import com.alipay.sofa.jraft.error.RaftError;
import io.kvraft.common.Errors;
import io.kvraft.common.proto.KvProto.Error;
import io.kvraft.common.proto.KvProto.ErrorCode;

/** A jraft failure of a region's proposal or read, as the wire names it: what clients and a merge's steps retry on. */
final class RaftErrors {

    private RaftErrors() {
    }

    /**
     * {@link Region#errorOf(Status)} for region {@code id} whose leader hint is {@code hint}, {@code transferring} while this
     * node hands its leadership over.
     */
    static Error of(int id, Status status, String hint, boolean transferring) {
        RaftError e = status.getRaftError();
        return switch (e) {
            case EPERM -> Errors.of(hint.isEmpty() ? ErrorCode.NO_LEADER : ErrorCode.NOT_LEADER, hint,
                    "region " + id + ": " + status.getErrorMsg());
            // jraft refuses a proposal with EBUSY ("Is transferring leadership.") while this node hands its leadership
            // over: not taken, and no leader for that moment, as RequestGate answers a request that comes in then
            case EBUSY, EAGAIN -> transferring || String.valueOf(status.getErrorMsg()).contains("transferring leadership")
                    ? Errors.of(ErrorCode.NO_LEADER, "", "region " + id + ": its leadership is moving to another node ("
                            + status.getErrorMsg() + ")")
                    : Errors.of(ErrorCode.BUSY, hint, "region " + id + ": " + status.getErrorMsg());
            case ENODESHUTDOWN, ESHUTDOWN -> Errors.of(ErrorCode.SHUTTING_DOWN, hint, "region " + id + " is shutting down");
            case ETIMEDOUT -> Errors.of(ErrorCode.TIMEOUT, hint, "region " + id + ": " + status.getErrorMsg());
            default -> Errors.of(ErrorCode.INTERNAL, hint, "region " + id + ": " + status);
        };
    }
}
