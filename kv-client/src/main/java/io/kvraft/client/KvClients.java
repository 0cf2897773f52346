package io.kvraft.client;

import io.kvraft.common.KvException;
import io.kvraft.client.config.ClientConfig;

/** Makes clients. */
public final class KvClients {

    private KvClients() {
    }

    /**
     * A client of the cluster named by {@code config.servers()}. Fetches the route table before it
     * returns; throws a KvException (UNAVAILABLE) when no server answers within the operation timeout.
     */
    public static KvClient connect(ClientConfig config) {
        RoutingKvClient client = new RoutingKvClient(config);
        client.connect();
        return client;
    }
}
