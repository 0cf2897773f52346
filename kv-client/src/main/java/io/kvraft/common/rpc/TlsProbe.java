package io.kvraft.common.rpc;

import io.kvraft.common.config.HostPort;
import io.kvraft.common.config.TlsConfig;

import javax.net.ssl.KeyManager;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509TrustManager;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import java.util.Optional;

/**
 * Tells whether a connection that bolt saw fail was refused over TLS, and why, with one handshake of
 * its own: bolt reports such a failure only as a failed send or a closed connection, and its client
 * would retry it until the operation's deadline. The server's certificate arriving (or not) in the
 * trust manager says whether the server speaks TLS at all, the delegate trust manager whether this
 * client trusts it, and the server's alert after the handshake whether it trusts this client.
 */
final class TlsProbe {

    private TlsProbe() {
    }

    /**
     * Why a TLS handshake with {@code target} cannot succeed with these settings; empty when it can or the
     * node is not there. A handshake the node leaves unanswered (seen now and then from bolt's servers) is
     * tried again, up to three times within {@code timeoutMs}.
     */
    static Optional<String> diagnose(String target, TlsConfig tls, int timeoutMs) {
        int each = Math.max(100, timeoutMs / 3);
        for (int attempt = 1; ; attempt++) {
            try {
                return diagnoseOnce(target, tls, each);
            } catch (SocketTimeoutException unanswered) {
                if (attempt == 3) {
                    return Optional.empty();
                }
            }
        }
    }

    private static Optional<String> diagnoseOnce(String target, TlsConfig tls, int timeoutMs) throws SocketTimeoutException {
        HostPort hp = HostPort.parse(target);
        Recorder trust;
        KeyManager[] keys = null;
        try {
            if (tls.enabled()) {
                KeyStore ks = KeyStore.getInstance(tls.keystoreType());
                char[] password = tls.keystorePassword() == null ? new char[0] : tls.keystorePassword().toCharArray();
                try (InputStream in = Files.newInputStream(Path.of(tls.keystore()))) {
                    ks.load(in, password);
                }
                KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
                kmf.init(ks, password);
                keys = kmf.getKeyManagers();
                TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
                tmf.init(ks);
                trust = new Recorder((X509TrustManager) tmf.getTrustManagers()[0]);
            } else {
                trust = new Recorder(null);
            }
        } catch (IOException | GeneralSecurityException e) {
            return Optional.of("cannot read the keystore " + tls.keystore() + " (" + e.getClass().getSimpleName() + ": "
                    + e.getMessage() + ")");
        }
        SSLException failure = null;
        try (Socket raw = new Socket()) {
            raw.connect(new InetSocketAddress(hp.host(), hp.port()), timeoutMs);
            raw.setSoTimeout(timeoutMs);
            SSLContext ctx = SSLContext.getInstance("TLS");
            ctx.init(keys, new TrustManager[]{trust}, null);
            try (SSLSocket s = (SSLSocket) ctx.getSocketFactory().createSocket(raw, hp.host(), hp.port(), false)) {
                s.startHandshake();
                // TLS 1.3: a server that refuses our certificate says so after the handshake, on the first read
                s.setSoTimeout(Math.min(timeoutMs, 1000));
                try {
                    s.getInputStream().read();
                } catch (SocketTimeoutException waitingForARequest) {
                    return Optional.empty(); // the handshake was accepted: TLS is not the problem
                }
            } catch (SSLException e) {
                failure = e;
            }
        } catch (SocketTimeoutException e) {
            throw e;
        } catch (IOException | GeneralSecurityException e) {
            return Optional.empty(); // not there, or not answering: a matter for retries, not for TLS
        }
        if (!tls.enabled()) {
            return trust.presented
                    ? Optional.of("the server requires TLS, and this client has tls.enabled: false")
                    : Optional.empty();
        }
        if (!trust.presented) {
            return failure == null ? Optional.empty()
                    : Optional.of("the server does not speak TLS (plaintext?), and this client has tls.enabled: true ("
                    + describe(failure) + ")");
        }
        if (trust.rejected != null) {
            return Optional.of("the server's certificate is not trusted: not signed by a CA in " + tls.keystore() + " ("
                    + describe(trust.rejected) + ")");
        }
        return failure == null ? Optional.empty()
                : Optional.of("the server refused this client's certificate from " + tls.keystore()
                + " (not signed by the cluster's CA?) (" + describe(failure) + ")");
    }

    private static String describe(Throwable t) {
        String m = t.getMessage();
        return t.getClass().getSimpleName() + (m == null ? "" : ": " + m.lines().findFirst().orElse(""));
    }

    /** Notes whether the server presented a certificate and whether the delegate (if any) trusted it. */
    private static final class Recorder implements X509TrustManager {
        private final X509TrustManager delegate;
        volatile boolean presented;
        volatile CertificateException rejected;

        Recorder(X509TrustManager delegate) {
            this.delegate = delegate;
        }

        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType) throws CertificateException {
            presented = true;
            if (delegate == null) {
                throw new CertificateException("plaintext client: not trusting any server");
            }
            try {
                delegate.checkServerTrusted(chain, authType);
            } catch (CertificateException e) {
                rejected = e;
                throw e;
            }
        }

        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType) throws CertificateException {
            throw new CertificateException("a client only");
        }

        @Override
        public X509Certificate[] getAcceptedIssuers() {
            return delegate == null ? new X509Certificate[0] : delegate.getAcceptedIssuers();
        }
    }
}
