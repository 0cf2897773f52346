package io.kvraft.server.region;

import com.alipay.sofa.jraft.Closure;
import com.alipay.sofa.jraft.Status;
import io.kvraft.common.proto.KvProto.Error;
import io.kvraft.server.store.RangeCapture;

/**
 * The closure of a BACKUP_POINT entry: the state machine fills in the capture it took when it applied the
 * entry (on its own thread, so at exactly that index); jraft then runs this, and the callback gets the
 * capture or the error.
 */
public final class BackupPoint implements Closure {

    /** What a backup gets back: a capture at {@code index}, or an error for the client. */
    public interface Callback {
        void captured(RangeCapture capture, long index, long term);

        void failed(Error error);
    }

    private final Region region;
    private final Callback callback;
    /** Set by the state machine before it runs this closure. */
    RangeCapture capture;
    long index;
    long term;
    RuntimeException captureFailure;

    BackupPoint(Region region, Callback callback) {
        this.region = region;
        this.callback = callback;
    }

    @Override
    public void run(Status status) {
        if (status.isOk() && capture != null) {
            callback.captured(capture, index, term);
        } else if (status.isOk()) {
            callback.failed(io.kvraft.common.Errors.of(io.kvraft.common.proto.KvProto.ErrorCode.INTERNAL,
                    "region " + region.id() + ": backup capture failed: " + captureFailure));
        } else {
            callback.failed(region.errorOf(status));
        }
    }
}
