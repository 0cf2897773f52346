package io.kvraft.client;

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
        Routes routes = new Routes(config.servers(), calls);
        try {
            routes.connect();
        } catch (RuntimeException e) {
            calls.close();
            throw e;
        }
        return new RoutingKvClient(config, calls, routes, new Dispatcher(routes, calls, config.batching()));
    }
}
