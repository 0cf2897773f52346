package io.kvraft.server;

import io.kvraft.common.config.TlsConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Switches bolt to mutual TLS for the whole JVM: the node's RPC port (clients and peers must present
 * a certificate of the CA in the keystore) and every connection jraft opens to peers. jraft creates
 * its bolt clients and server itself, so bolt's JVM-wide system properties are the only way in; bolt
 * reads them when a server starts and when a connection is made, so they must be set before the node
 * starts. The node's own clients (peer probes) set the same per client.
 */
final class ServerTls {

    private static final Logger LOG = LoggerFactory.getLogger(ServerTls.class);

    private ServerTls() {
    }

    static void apply(TlsConfig tls) {
        System.setProperty("bolt.server.ssl.enable", "true");
        System.setProperty("bolt.server.ssl.clientAuth", "true");
        System.setProperty("bolt.server.ssl.keystore", tls.keystore());
        System.setProperty("bolt.server.ssl.keystore.password", tls.keystorePassword());
        System.setProperty("bolt.server.ssl.keystore.type", tls.keystoreType());
        System.setProperty("bolt.client.ssl.enable", "true");
        System.setProperty("bolt.client.ssl.keystore", tls.keystore());
        System.setProperty("bolt.client.ssl.keystore.password", tls.keystorePassword());
        System.setProperty("bolt.client.ssl.keystore.type", tls.keystoreType());
        LOG.info("mutual TLS on, keystore {} ({})", tls.keystore(), tls.keystoreType());
    }
}
