package io.kvraft.server.raft;

import com.alipay.sofa.jraft.rpc.RpcContext;
import com.alipay.sofa.jraft.rpc.RpcProcessor;

import java.util.concurrent.Executor;
import java.util.function.BiConsumer;

/** Our request handlers as jraft RPC processors on the node's shared RPC server. */
public final class Processors {

    private static final Executor DIRECT = Runnable::run;

    private Processors() {
    }

    /** A processor of {@code type} requests that runs {@code handler} on the connection's thread (it must not block). */
    public static <T> RpcProcessor<T> direct(Class<T> type, BiConsumer<RpcContext, T> handler) {
        return new RpcProcessor<>() {
            @Override
            public void handleRequest(RpcContext ctx, T request) {
                handler.accept(ctx, request);
            }

            @Override
            public String interest() {
                return type.getName();
            }

            @Override
            public Executor executor() {
                return DIRECT;
            }
        };
    }
}
