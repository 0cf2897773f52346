package io.kvraft.common.rpc;

import com.alipay.remoting.rpc.exception.InvokeException;
import com.alipay.remoting.rpc.exception.InvokeTimeoutException;
import io.kvraft.common.KvException;
import io.kvraft.common.ErrorCode;
import org.junit.jupiter.api.Test;

import java.io.IOException;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What a failed call tells its caller about whether the node got the request: bolt's callback failure for a request it
 * could not write (CLIENT_SEND_ERROR, as a connection closes under a stopping node) is unsent, so a replica move or a
 * split may be asked again; a timeout or a server's failure is not.
 */
class TransportFailureTest {

    private static final String NODE = "127.0.0.1:7001";

    @Test
    void when_boltCouldNotWriteTheRequest_then_itIsUnavailableAndUnsent() {
        // as bolt's RpcInvokeCallbackListener words it
        KvException k = Transport.failure(NODE, new InvokeException("Exception caught in invocation. The address is "
                + NODE + " responseStatus:CLIENT_SEND_ERROR", new IOException("Connection reset by peer")));
        assertThat(k.code()).isEqualTo(ErrorCode.UNAVAILABLE);
        assertThat(k.unsent()).isTrue();
        assertThat(k.getMessage()).startsWith("UNAVAILABLE: " + NODE + ": InvokeException: Exception caught");
    }

    @Test
    void when_theRequestMayHaveArrived_then_itIsNotUnsent() {
        KvException server = Transport.failure(NODE, new InvokeException("Exception caught in invocation. The address"
                + " is " + NODE + " responseStatus:SERVER_EXCEPTION", new IOException("x")));
        assertThat(server.code()).isEqualTo(ErrorCode.UNAVAILABLE);
        assertThat(server.unsent()).isFalse();
        KvException timeout = Transport.failure(NODE, new InvokeTimeoutException("Invoke timeout when invoke with"
                + " callback.The address is " + NODE));
        assertThat(timeout.code()).isEqualTo(ErrorCode.TIMEOUT);
        assertThat(timeout.unsent()).isFalse();
    }
}
