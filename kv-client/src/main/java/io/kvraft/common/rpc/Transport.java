package io.kvraft.common.rpc;

import com.alipay.remoting.InvokeCallback;
import com.alipay.remoting.InvokeContext;
import com.alipay.remoting.ResponseStatus;
import com.alipay.remoting.config.BoltClientOption;
import com.alipay.remoting.exception.RemotingException;
import com.alipay.remoting.rpc.RpcClient;
import com.alipay.remoting.rpc.exception.InvokeTimeoutException;
import com.google.protobuf.Message;
import io.kvraft.common.KvException;
import io.kvraft.common.config.HostPort;
import io.kvraft.common.config.TlsConfig;
import io.kvraft.common.ErrorCode;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * Asynchronous request/response over a bolt RPC client (bolt is the transport under jraft's RPC, so
 * clients need bolt, not jraft), set up as jraft sets up its own. Failures of the transport become
 * KvExceptions: TIMEOUT when no answer came in time, UNAVAILABLE when the connection failed
 * ({@link KvException#unsent()} when the request never left), and a permanent UNAVAILABLE naming the
 * cause when the node refused this client's TLS settings (see {@link TlsProbe}).
 * Callbacks run on bolt's I/O threads, so continuations must not block.
 */
public final class Transport implements AutoCloseable {

    private static final Executor DIRECT = Runnable::run;
    /** How long after its own timeout a call is failed here if bolt never reported it (see {@link #call}). */
    static final long LOST_CALLBACK_GRACE_MS = 2000;

    private final RpcClient rpc;
    /**
     * Fails calls whose callback bolt dropped. bolt hands a timed-out call's callback to its shared default
     * executor (400 threads, queue 600) and drops it when that is full, as a burst of thousands of timeouts
     * does: the caller would wait forever.
     */
    private final ScheduledThreadPoolExecutor lostCallbacks;
    /** Targets checked once as host:port, in the form bolt takes ("host:port"). */
    private final ConcurrentHashMap<String, String> addresses = new ConcurrentHashMap<>();
    private final TlsConfig tls;
    /** Nodes that have answered on this transport: their timeouts are not TLS trouble. */
    private final java.util.Set<String> answered = ConcurrentHashMap.newKeySet();
    /** Per node, the TLS diagnosis under way or found; a node found fine is probed again only after a while. */
    private final ConcurrentHashMap<String, Probe> probes = new ConcurrentHashMap<>();
    private final java.util.concurrent.ExecutorService prober;

    private record Probe(CompletableFuture<java.util.Optional<String>> result, long doneNanos) {
    }

    private static final long REPROBE_NANOS = TimeUnit.SECONDS.toNanos(2);

    /** Plaintext connections. */
    public Transport() {
        this(TlsConfig.OFF);
    }

    /**
     * Connections with mutual TLS when {@code tls} is enabled. The TLS settings are this client's own
     * bolt options, not the JVM-wide {@code bolt.client.ssl.*} properties, so plaintext and TLS clients
     * can live in one process.
     */
    public Transport(TlsConfig tls) {
        WireProtocol.register();
        this.tls = tls;
        this.prober = java.util.concurrent.Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "kv-client-tls-probe");
            t.setDaemon(true);
            return t;
        });
        this.rpc = new RpcClient();
        // as jraft's BoltRpcClient does: flush consolidation, its write-buffer water marks, reconnect on
        rpc.option(BoltClientOption.NETTY_FLUSH_CONSOLIDATION, true);
        rpc.initWriteBufferWaterMark(Integer.getInteger("bolt.channel_write_buf_low_water_mark", 256 * 1024),
                Integer.getInteger("bolt.channel_write_buf_high_water_mark", 512 * 1024));
        rpc.option(BoltClientOption.CONN_RECONNECT_SWITCH, true);
        if (tls.enabled()) {
            rpc.option(BoltClientOption.CLI_SSL_ENABLE, true);
            rpc.option(BoltClientOption.CLI_SSL_KEYSTORE, tls.keystore());
            rpc.option(BoltClientOption.CLI_SSL_KEYSTORE_PASS, tls.keystorePassword());
            rpc.option(BoltClientOption.CLI_SSL_KEYSTORE_TYPE, tls.keystoreType());
        }
        rpc.startup();
        this.lostCallbacks = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "kv-client-lost-callbacks");
            t.setDaemon(true);
            return t;
        });
        lostCallbacks.setRemoveOnCancelPolicy(true); // answered calls leave the queue at once
    }

    @SuppressWarnings("unchecked")
    public <R extends Message> CompletableFuture<R> call(String target, Message request, long timeoutMs) {
        CompletableFuture<R> f = new CompletableFuture<>();
        String address;
        try {
            address = addresses.computeIfAbsent(target, t -> {
                HostPort hp = HostPort.parse(t);
                return hp.host() + ":" + hp.port();
            });
        } catch (IllegalArgumentException e) {
            f.completeExceptionally(new KvException(ErrorCode.INVALID_ARGUMENT, e.getMessage()));
            return f;
        }
        try {
            // as jraft's client does: no CRC of each frame (bolt computes one on both sides unless told otherwise)
            InvokeContext noCrc = new InvokeContext();
            noCrc.put(InvokeContext.BOLT_CRC_SWITCH, false);
            rpc.invokeWithCallback(address, request, noCrc, new InvokeCallback() {
                @Override
                public void onResponse(Object result) {
                    answered.add(target);
                    f.complete((R) result);
                }

                @Override
                public void onException(Throwable err) {
                    if (err instanceof InvokeTimeoutException && answered.contains(target)) {
                        f.completeExceptionally(translate(target, err));
                    } else {
                        // (a node that never answered may have timed out a plaintext request it could not read)
                        // a failed send or a closed connection: maybe a refused TLS handshake, which retries cannot mend
                        probe(target, timeoutMs).whenComplete((why, probeErr) -> f.completeExceptionally(
                                why != null && why.isPresent()
                                        ? KvException.permanent(ErrorCode.UNAVAILABLE, target + ": TLS handshake failed: " + why.get())
                                        : failure(target, err)));
                    }
                }

                @Override
                public Executor getExecutor() {
                    return DIRECT;
                }
            }, (int) Math.min(Integer.MAX_VALUE, Math.max(1, timeoutMs)));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            f.completeExceptionally(new KvException(ErrorCode.UNAVAILABLE, "interrupted"));
        } catch (RemotingException | RuntimeException e) {
            // thrown before sending (bolt opens the connection on the caller's thread): nothing was sent
            f.completeExceptionally(unsent(translate(target, e)));
        }
        if (!f.isDone()) {
            try {
                ScheduledFuture<?> lost = lostCallbacks.schedule(() -> f.completeExceptionally(new KvException(
                        ErrorCode.TIMEOUT, "no answer from " + target + " in time (bolt reported nothing)")),
                        Math.max(1, timeoutMs) + LOST_CALLBACK_GRACE_MS, TimeUnit.MILLISECONDS);
                f.whenComplete((r, e) -> lost.cancel(false));
            } catch (RejectedExecutionException closed) {
                // this transport is closed: bolt fails the call itself
            }
        }
        return f;
    }

    /** The TLS diagnosis of {@code target}: one at a time per node, a positive one kept, a negative one for a while. */
    private CompletableFuture<java.util.Optional<String>> probe(String target, long timeoutMs) {
        long now = System.nanoTime();
        Probe p = probes.compute(target, (t, old) -> {
            if (old != null && (!old.result().isDone() || old.result().join().isPresent()
                    || now - old.doneNanos() < REPROBE_NANOS)) {
                return old;
            }
            try {
                return new Probe(CompletableFuture.supplyAsync(
                        () -> TlsProbe.diagnose(t, tls, (int) Math.min(Math.max(timeoutMs, 1000), 5000)), prober), now);
            } catch (RejectedExecutionException closed) {
                return new Probe(CompletableFuture.completedFuture(java.util.Optional.empty()), now);
            }
        });
        return p.result().exceptionally(e -> java.util.Optional.empty());
    }

    /**
     * A failed call as callers see it: {@link KvException#unsent()} when bolt could not write the request to the
     * connection (CLIENT_SEND_ERROR: it was closing, say, as its node stopped), so the node never got it and even a
     * change that must not run twice may be asked again.
     */
    static KvException failure(String target, Throwable err) {
        KvException k = translate(target, err);
        return String.valueOf(err.getMessage()).contains("responseStatus:" + ResponseStatus.CLIENT_SEND_ERROR.name())
                ? unsent(k) : k;
    }

    private static KvException unsent(KvException k) {
        return new KvException(k.code(), k.getMessage().substring(k.code().name().length() + 2), "", true);
    }

    private static KvException translate(String target, Throwable err) {
        if (err instanceof InvokeTimeoutException || String.valueOf(err.getMessage()).contains("Invoke timeout")) {
            return new KvException(ErrorCode.TIMEOUT, "no answer from " + target + " in time");
        }
        return new KvException(ErrorCode.UNAVAILABLE, target + ": " + err.getClass().getSimpleName()
                + (err.getMessage() == null ? "" : ": " + firstLine(err.getMessage())));
    }

    private static String firstLine(String s) {
        int nl = s.indexOf('\n');
        return nl < 0 ? s : s.substring(0, nl);
    }

    @Override
    public void close() {
        rpc.shutdown();
        lostCallbacks.shutdownNow();
        prober.shutdownNow();
    }
}
