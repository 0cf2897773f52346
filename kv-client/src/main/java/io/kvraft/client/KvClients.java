package io.kvraft.client;

import io.kvraft.client.admin.KvAdmin;
import io.kvraft.client.admin.RoutingKvAdmin;
import io.kvraft.client.batch.Dispatcher;
import io.kvraft.client.config.ClientConfig;
import io.kvraft.client.route.Calls;
import io.kvraft.client.route.Routes;

/** Makes clients. */
public final class KvClients {

    private KvClients() {
    }

    /**
     * A client of the cluster named by {@code config.servers()}. Fetches the route table before it
     * returns; throws a KvException (UNAVAILABLE) when no server answers within the operation timeout.
     */
    public static KvClient connect(ClientConfig config) {
        Calls calls = Calls.open(config);
        Routes routes = connected(config, calls);
        return new RoutingKvClient(config, calls, routes, new Dispatcher(routes, calls, config.batching()));
    }

    /**
     * The admin operations alone, for a tool that needs nothing else: as {@link #connect}, it fetches the route table
     * before it returns and throws a KvException (UNAVAILABLE) when no server answers within the operation timeout.
     * Closing it closes its connections.
     */
    public static KvAdmin admin(ClientConfig config) {
        Calls calls = Calls.open(config);
        Routes routes = connected(config, calls);
        return new RoutingKvAdmin(calls, routes, new Dispatcher(routes, calls, config.batching()));
    }

    /** The routes of {@code config.servers()}, fetched once; {@code calls} are closed when that fails. */
    private static Routes connected(ClientConfig config, Calls calls) {
        Routes routes = new Routes(config.servers(), calls);
        try {
            routes.connect();
        } catch (RuntimeException e) {
            calls.close();
            throw e;
        }
        return routes;
    }
}
