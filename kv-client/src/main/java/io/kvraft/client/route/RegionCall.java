package io.kvraft.client.route;

import com.google.protobuf.Message;
import io.kvraft.client.route.RouteTable.Route;
import io.kvraft.common.ErrorCode;
import io.kvraft.common.Errors;
import io.kvraft.common.KvException;
import io.kvraft.common.proto.KvProto;
import io.kvraft.common.proto.KvProto.Error;
import io.kvraft.common.proto.KvProto.ReadMode;

import java.util.concurrent.CompletableFuture;
import java.util.function.Function;

/**
 * One request to the region holding {@code cursor} (or, when {@code before}, the keys just below it; an empty cursor is
 * then +inf), rebuilt from the current route on every try and retried by error code until the deadline, as single-key
 * operations are. A write whose outcome is unknown is not retried. Range operations (a scan page, a range delete, the
 * locks of a range) and a backup's capture are made of such calls.
 */
public final class RegionCall<R extends Message> {

    /** The answer, with the route and the node it came from. */
    public record Answer<R>(Route route, String target, R response) {
    }

    private final Routes routes;
    private final Calls calls;
    private final byte[] cursor;
    private final boolean before;
    private final boolean idempotent;
    private final ReadMode mode;
    private final long deadlineNanos;
    private final Function<Route, Message> request;
    private final Function<R, Error> errorOf;
    private final CompletableFuture<Answer<R>> result = new CompletableFuture<>();
    private int attempts;

    /**
     * @param mode    where the request goes ({@link Routes#target}); null for the leader
     * @param request the request for the region as routed at each try
     * @param errorOf reads a response's error (code OK: none)
     */
    public RegionCall(Routes routes, Calls calls, byte[] cursor, boolean before, boolean idempotent, ReadMode mode,
                      long deadlineNanos, Function<Route, Message> request, Function<R, Error> errorOf) {
        this.routes = routes;
        this.calls = calls;
        this.cursor = cursor;
        this.before = before;
        this.idempotent = idempotent;
        this.mode = mode;
        this.deadlineNanos = deadlineNanos;
        this.request = request;
        this.errorOf = errorOf;
    }

    public CompletableFuture<Answer<R>> run() {
        send();
        return result;
    }

    private void send() {
        Route route = before ? routes.table().lookupBefore(cursor) : routes.table().lookup(cursor);
        if (route == null) {
            retry(null, "", Errors.of(KvProto.ErrorCode.REGION_NOT_FOUND, "no region holds the range in the route table"),
                    true);
            return;
        }
        String target = Routes.target(route, mode);
        long timeoutMs = Math.max(1, Math.min(calls.requestTimeoutMs(), (deadlineNanos - System.nanoTime()) / 1_000_000L));
        calls.transport().<R>call(target, request.apply(route), timeoutMs).whenComplete((resp, err) -> {
            Error error = err != null ? Errors.of(KvException.unwrap(err)) : errorOf.apply(resp);
            if (err == null && error.getCode() == KvProto.ErrorCode.OK) {
                result.complete(new Answer<>(route, target, resp));
            } else {
                retry(route, target, error, err != null && KvException.unwrap(err).unsent());
            }
        });
    }

    private void retry(Route route, String target, Error error, boolean unsent) {
        attempts++;
        long delay = routes.retryDelay(route, target, error, attempts, unsent || idempotent, deadlineNanos);
        if (delay == RetryPolicy.NO_RETRY) {
            result.completeExceptionally(KvException.fromWire(error));
        } else if (RetryPolicy.refreshesRoute(ErrorCode.fromWire(error.getCode()))) {
            routes.refresh().whenComplete((v, e) -> calls.later(this::send, delay));
        } else {
            calls.later(this::send, delay);
        }
    }
}
