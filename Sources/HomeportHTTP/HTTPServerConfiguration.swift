import Foundation

/// Where the server listens and the limits it enforces on every connection.
package struct HTTPServerConfiguration: Sendable, Equatable {
    /// The address to bind: an IPv4 or IPv6 literal, or a name such as `localhost`.
    package var host: String
    /// The TCP port; 0 picks a free one (read it back from the running server: `HomeportApplication.port`).
    package var port: Int
    /// A Unix-domain socket to listen on instead of ``host`` and ``port`` (mode 0660), removed
    /// when the server stops.
    package var unixSocketPath: String? = nil
    /// Worker threads, each running an epoll loop and handlers; defaults to the core count.
    package var workerThreads: Int
    /// Largest accepted request body; larger ones are answered 413 without being read.
    package var maxBodyBytes: Int
    /// Memory for one connection's request line and headers; a larger header block is refused
    /// (libmicrohttpd answers 431) and the connection closed.
    package var maxHeaderBytes: Int
    /// Seconds a connection may stay silent before the server closes it.
    package var idleTimeoutSeconds: Int
    /// Connections open at once; a further one takes the place of a connection waiting for a
    /// request, or is closed at once when every connection is busy with one.
    package var maxConnections: Int
    /// Connections open at once from one client address (an IPv6 client counts by its /64);
    /// further ones are closed at once. 0 means no cap.
    package var maxConnectionsPerAddress: Int
    /// Seconds a connection has, from its opening or from its previous answer, to deliver a whole
    /// request line and header block, however slowly it trickles them; then it is closed.
    package var headerTimeoutSeconds: Int
    /// Seconds a request has, once its headers are in, to deliver its whole body; then the
    /// connection is closed.
    package var bodyTimeoutSeconds: Int
    /// The slowest a body may arrive, in bytes a second on average, once ``bodyRateGraceSeconds``
    /// have passed since its headers; slower, the connection is closed (a body trickled to hold a
    /// connection frees it long before ``bodyTimeoutSeconds``). 0 checks no rate.
    package var minBodyBytesPerSecond = 1024
    /// Seconds a body has before ``minBodyBytesPerSecond`` is checked.
    package var bodyRateGraceSeconds = 5
    /// Request bodies held in memory at once, over every connection; a request whose body does
    /// not fit is answered 503 and its connection closed.
    package var maxBufferedBodyBytes: Int
    /// How long a graceful shutdown waits for requests in flight.
    package var drainTimeout: Duration
    /// Threads that run ``HandlerPlacement/pool`` routes (password hashing): fewer than the
    /// cores, so that the worker threads always have a core to answer everyone else.
    package var poolThreads: Int
    /// Pool requests that may wait for a thread; a further one is answered 503 with
    /// `Retry-After` at once.
    package var poolQueueLimit: Int
    /// The reverse proxies whose ``TrustedProxies/header`` names the client (its address then
    /// counts for rate limits, stream caps and the access log); none by default.
    package var trustedProxies: TrustedProxies
    /// A certificate and key to serve HTTPS with (libmicrohttpd's GnuTLS); `nil` serves HTTP.
    package var tls: TLSCredentials?
    /// Access-log lines are gathered and written together, at most this long after the first of
    /// a batch and when the server stops (``BufferedLogSink``); `nil` writes each line at once.
    package var accessLogDelay: Duration? = nil
    /// How the kernel schedules the worker threads (Linux; elsewhere it is ignored).
    package var workerScheduling: WorkerScheduling = .normal

    /// Creates a configuration; every limit has a default fit for a small server.
    package init(
        host: String = "127.0.0.1",
        port: Int = 8080,
        workerThreads: Int = ProcessInfo.processInfo.activeProcessorCount,
        maxBodyBytes: Int = 1 << 20,
        maxHeaderBytes: Int = 16 << 10,
        idleTimeoutSeconds: Int = 30,
        maxConnections: Int = 1000,
        maxConnectionsPerAddress: Int = 100,
        headerTimeoutSeconds: Int = 20,
        bodyTimeoutSeconds: Int = 30,
        maxBufferedBodyBytes: Int = 64 << 20,
        drainTimeout: Duration = .seconds(10),
        poolThreads: Int = HTTPServerConfiguration.defaultPoolThreads,
        poolQueueLimit: Int = 64,
        trustedProxies: TrustedProxies = TrustedProxies(),
        tls: TLSCredentials? = nil
    ) {
        self.host = host
        self.port = port
        self.workerThreads = workerThreads
        self.maxBodyBytes = maxBodyBytes
        self.maxHeaderBytes = maxHeaderBytes
        self.idleTimeoutSeconds = idleTimeoutSeconds
        self.maxConnections = maxConnections
        self.maxConnectionsPerAddress = maxConnectionsPerAddress
        self.headerTimeoutSeconds = headerTimeoutSeconds
        self.bodyTimeoutSeconds = bodyTimeoutSeconds
        self.maxBufferedBodyBytes = maxBufferedBodyBytes
        self.drainTimeout = drainTimeout
        self.poolThreads = poolThreads
        self.poolQueueLimit = poolQueueLimit
        self.trustedProxies = trustedProxies
        self.tls = tls
    }

    /// One thread fewer than the cores, at least one.
    package static var defaultPoolThreads: Int { max(1, ProcessInfo.processInfo.activeProcessorCount - 1) }
}

/// A `HOST:PORT` listen address (`127.0.0.1:8080`, `[::1]:8080`, `localhost:0`).
package struct ListenAddress: Sendable, Equatable, CustomStringConvertible {
    /// The host without brackets.
    package var host: String
    /// The port, 0–65535.
    package var port: Int

    /// Creates an address.
    package init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT`; IPv6 literals go in brackets. Throws a message fit for a user.
    package init(parsing text: String) throws {
        let invalid = ListenAddressError(text: text)
        var hostPart: Substring
        var portPart: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw invalid }
            hostPart = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { throw invalid }
            portPart = rest.dropFirst()
        } else {
            guard let colon = text.lastIndex(of: ":") else { throw invalid }
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
            guard !hostPart.contains(":") else { throw invalid }
        }
        guard !hostPart.isEmpty, let port = Int(portPart), (0...65535).contains(port) else { throw invalid }
        self.host = String(hostPart)
        self.port = port
    }

    /// `host:port`, with brackets around an IPv6 literal.
    package var description: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}

/// A listen address that is not `HOST:PORT`.
package struct ListenAddressError: Error, CustomStringConvertible, Equatable {
    /// What the user typed.
    package var text: String

    /// A sentence for the user.
    package var description: String {
        "'\(text)' is not a listen address; use HOST:PORT, such as 127.0.0.1:8080 or [::1]:8080"
    }
}

/// A certificate chain and its private key, PEM-encoded, to serve HTTPS with.
package struct TLSCredentials: Sendable, Equatable {
    /// The certificate, followed by any intermediates (PEM).
    package var certificatePEM: String
    /// The private key (PEM, unencrypted).
    package var keyPEM: String
    /// The GnuTLS priority string: which protocol versions, key exchanges and ciphers are
    /// offered (``modernPriorities`` unless the operator says otherwise).
    package var priorities = TLSCredentials.modernPriorities

    /// TLS 1.2 and 1.3 only, forward-secret key exchanges only, AEAD ciphers only (AES-GCM,
    /// ChaCha20-Poly1305): no TLS 1.0 or 1.1, no static RSA, no CBC, no SHA-1 MACs.
    package static let modernPriorities =
        "SECURE128:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-CIPHER-ALL:+AES-256-GCM:+AES-128-GCM:+CHACHA20-POLY1305"
        + ":-MAC-ALL:+AEAD:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:+DHE-RSA"

    /// Credentials from PEM text.
    package init(certificatePEM: String, keyPEM: String) {
        self.certificatePEM = certificatePEM
        self.keyPEM = keyPEM
    }

    /// Reads a certificate file and a key file; throws a message fit for a user.
    package init(certificateFile: String, keyFile: String) throws {
        func read(_ path: String, _ what: String, _ marker: String) throws -> String {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw TLSCredentialsError(message: "cannot read the \(what) file \(path)")
            }
            guard text.contains(marker) else {
                throw TLSCredentialsError(message: "\(path) is not a PEM \(what) (no '\(marker)' line)")
            }
            return text
        }
        certificatePEM = try read(certificateFile, "certificate", "-----BEGIN CERTIFICATE-----")
        keyPEM = try read(keyFile, "key", "PRIVATE KEY-----")
    }
}

/// TLS credentials that cannot be used.
package struct TLSCredentialsError: Error, CustomStringConvertible, Equatable {
    /// What is wrong, for a person.
    package var message: String

    /// The message.
    package var description: String { message }
}
