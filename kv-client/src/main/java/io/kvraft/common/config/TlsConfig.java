package io.kvraft.common.config;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.util.Collections;

import static java.util.Objects.requireNonNullElse;

/**
 * Mutual TLS for the RPC port (the {@code tls:} section of the server and the client YAML). One
 * keystore is both the key store (this side's key and certificate chain) and the trust store (the
 * CA certificate that the other side's certificate must be signed by); conf/tls/make-certs.sh makes
 * such keystores. Bolt checks no host names: trust comes from the private CA alone.
 *
 * @param enabled          TLS on the port (server) or on every connection (client); default false
 * @param keystore         path of the keystore file, relative to the working directory
 * @param keystorePassword its password (PKCS12: also the key's)
 * @param keystoreType     PKCS12 (default) or JKS
 */
public record TlsConfig(Boolean enabled, String keystore, String keystorePassword, String keystoreType) {

    public static final TlsConfig OFF = new TlsConfig(null, null, null, null);

    public TlsConfig {
        enabled = requireNonNullElse(enabled, false);
        keystoreType = requireNonNullElse(keystoreType, "PKCS12");
        if (enabled) {
            if (keystore == null || keystore.isBlank()) {
                throw new IllegalArgumentException("tls.keystore is required when tls.enabled is true");
            }
            if (keystorePassword == null) {
                throw new IllegalArgumentException("tls.keystorePassword is required when tls.enabled is true");
            }
            check(Path.of(keystore), keystorePassword, keystoreType);
        }
    }

    /** Opens the keystore now, so a wrong path, password or type fails at start with a clear message. */
    private static void check(Path file, String password, String type) {
        KeyStore ks;
        try {
            ks = KeyStore.getInstance(type);
        } catch (GeneralSecurityException e) {
            throw new IllegalArgumentException("tls.keystoreType '" + type + "' is not supported (PKCS12 or JKS)");
        }
        try (InputStream in = Files.newInputStream(file)) {
            ks.load(in, password.toCharArray());
        } catch (NoSuchFileException e) {
            throw new IllegalArgumentException("tls.keystore " + file.toAbsolutePath() + ": no such file");
        } catch (IOException | GeneralSecurityException e) {
            throw new IllegalArgumentException("tls.keystore " + file + ": cannot open as " + type + ": "
                    + (e.getCause() instanceof java.security.UnrecoverableKeyException ? "wrong password" : e.getMessage()));
        }
        try {
            boolean hasKey = false;
            boolean hasCa = false;
            for (String alias : Collections.list(ks.aliases())) {
                hasKey |= ks.isKeyEntry(alias);
                hasCa |= ks.isCertificateEntry(alias);
            }
            if (!hasKey || !hasCa) {
                throw new IllegalArgumentException("tls.keystore " + file + " must hold a private key with its certificate"
                        + " and the CA certificate as a trusted entry (see conf/tls/make-certs.sh)");
            }
        } catch (java.security.KeyStoreException e) {
            throw new IllegalArgumentException("tls.keystore " + file + ": " + e.getMessage());
        }
    }
}
