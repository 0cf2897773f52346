package io.kvraft.client.rpc;

import com.alipay.remoting.Protocol;
import com.alipay.remoting.ProtocolCode;
import com.alipay.remoting.ProtocolManager;
import com.alipay.remoting.rpc.protocol.RpcCommandCode;
import com.alipay.remoting.rpc.protocol.RpcProtocol;
import com.alipay.remoting.rpc.protocol.RpcProtocolV2;
import com.alipay.remoting.rpc.protocol.RpcResponseProcessor;

import java.util.List;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Makes bolt hand every RPC response to its callback on the I/O thread that read it. By default bolt
 * first passes each response to a thread of its default executor, which then calls the callback (or
 * the callback's own executor): one thread wake-up per response, on every client call and every
 * Raft AppendEntries reply. On two cores a wake-up costs tens of microseconds, which made it one of
 * the larger costs per request. Safe because every callback in this JVM either is non-blocking (ours:
 * they complete futures) or names its own executor (jraft's), which bolt still honours.
 */
public final class BoltDispatch {

    private static final AtomicBoolean DONE = new AtomicBoolean();

    private BoltDispatch() {
    }

    /** Process-wide and idempotent; call before the first RPC. */
    public static void responsesOnIoThreads() {
        if (!DONE.compareAndSet(false, true)) {
            return;
        }
        try {
            // bolt registers its protocols in RpcRemoting's static initializer, and only there: a second
            // registration throws, so make sure that initializer has run instead of registering ourselves
            Class.forName("com.alipay.remoting.rpc.RpcRemoting", true, BoltDispatch.class.getClassLoader());
        } catch (ClassNotFoundException e) {
            throw new IllegalStateException("bolt is not on the class path", e);
        }
        for (byte code : new byte[] {RpcProtocol.PROTOCOL_CODE, RpcProtocolV2.PROTOCOL_CODE}) {
            Protocol protocol = ProtocolManager.getProtocol(ProtocolCode.fromBytes(code));
            if (protocol == null) {
                throw new IllegalStateException("bolt protocol " + code + " is not registered");
            }
            // bolt registers protocols once (first wins), so this processor stays for the life of the JVM
            protocol.getCommandHandler().registerProcessor(RpcCommandCode.RPC_RESPONSE,
                    new RpcResponseProcessor(new CallerRuns()));
        }
    }

    /** Runs each task on the submitting thread. Hand-written: the JDK has no ExecutorService that does this. */
    private static final class CallerRuns extends AbstractExecutorService {
        @Override
        public void execute(Runnable command) {
            command.run();
        }

        @Override
        public void shutdown() {
        }

        @Override
        public List<Runnable> shutdownNow() {
            return List.of();
        }

        @Override
        public boolean isShutdown() {
            return false;
        }

        @Override
        public boolean isTerminated() {
            return false;
        }

        @Override
        public boolean awaitTermination(long timeout, TimeUnit unit) {
            return true;
        }
    }
}
