package io.kvraft.server.metrics;

import com.alipay.remoting.Protocol;
import com.alipay.remoting.ProtocolCode;
import com.alipay.remoting.ProtocolManager;
import com.alipay.remoting.rpc.protocol.RpcProtocol;
import com.alipay.remoting.rpc.protocol.RpcProtocolV2;

import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Set;
import java.util.concurrent.ThreadPoolExecutor;

/**
 * bolt's default executors: one per protocol version and JVM (bolt keeps them in its static protocol registry,
 * and offers no other way to reach them). They run the Raft RPCs other than AppendEntries and InstallSnapshot,
 * and hand on every response and timeout of the JVM's bolt clients.
 */
public final class BoltExecutors {

    private BoltExecutors() {
    }

    /** The default executors bolt has registered so far (none before its first client or server). */
    public static Set<ThreadPoolExecutor> defaults() {
        Set<ThreadPoolExecutor> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        for (byte code : new byte[]{RpcProtocol.PROTOCOL_CODE, RpcProtocolV2.PROTOCOL_CODE}) {
            Protocol p = ProtocolManager.getProtocol(ProtocolCode.fromBytes(code));
            if (p != null && p.getCommandHandler() != null
                    && p.getCommandHandler().getDefaultExecutor() instanceof ThreadPoolExecutor t) {
                seen.add(t);
            }
        }
        return seen;
    }
}
