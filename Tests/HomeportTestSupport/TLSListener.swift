import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// An HTTPS listener on 127.0.0.1 with a fresh self-signed certificate (which no system trusts) or
/// a test CA's, answering every request with a fixed JSON body and writing every request that got
/// past the handshake to a file. It shows that the client never bypasses TLS trust.
public final class TLSListener: @unchecked Sendable {
    private let process = Process()
    private let directory: TemporaryDirectory
    /// The port.
    public let port: Int

    /// Starts the listener with a fresh self-signed certificate of a fresh `key` (an
    /// `openssl req -newkey` value: `rsa:2048`, `ed25519`); `body` is what it answers.
    public convenience init(body: String, key: String = "rsa:2048") throws {
        let directory = try TemporaryDirectory()
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        openssl.arguments = [
            "openssl", "req", "-x509", "-newkey", key, "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
            "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", directory.file("key.pem"), "-out",
            directory.file("cert.pem"),
        ]
        openssl.standardOutput = FileHandle.nullDevice
        openssl.standardError = FileHandle.nullDevice
        try openssl.spawn()
        guard openssl.waitForExit() == 0 else { throw RawHTTPError("openssl could not make a certificate") }
        try self.init(
            body: body, certificate: directory.file("cert.pem"), key: directory.file("key.pem"), directory: directory)
    }

    /// Starts the listener with `certificates`' certificate (a test CA's, for whatever names
    /// it was made for); `body` is what it answers.
    public convenience init(body: String, certificates: TestCertificates) throws {
        try self.init(
            body: body, certificate: certificates.certificateFile, key: certificates.keyFile,
            directory: try TemporaryDirectory())
    }

    private init(body: String, certificate: String, key: String, directory: TemporaryDirectory) throws {
        self.directory = directory
        try body.write(toFile: directory.file("body.json"), atomically: true, encoding: .utf8)
        port = try RawHTTP.freePort()
        let server = """
            import http.server, ssl, sys
            port, cert, key, body, log = int(sys.argv[1]), sys.argv[2], sys.argv[3], open(sys.argv[4], 'rb').read(), sys.argv[5]
            class Handler(http.server.BaseHTTPRequestHandler):
                def do_GET(self):
                    length = int(self.headers.get('Content-Length') or 0)
                    sent = self.rfile.read(length) if length else b''
                    with open(log, 'a') as f: f.write(repr((self.requestline, dict(self.headers), sent)) + '\\n')
                    self.send_response(200)
                    self.send_header('Content-Type', 'application/json')
                    self.send_header('Content-Length', str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                do_POST = do_PUT = do_PATCH = do_DELETE = do_GET
                def log_message(self, *args): pass
            server = http.server.HTTPServer(('127.0.0.1', port), Handler)
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(cert, key)
            server.socket = context.wrap_socket(server.socket, server_side=True)
            server.serve_forever()
            """
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", "-c", server, String(port), certificate, key, directory.file("body.json"),
            directory.file("requests.log"),
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.spawn()
        if RawHTTP.waitUntilListening(port: port, seconds: 5) { return }
        process.stop()
        throw RawHTTPError("the TLS listener did not start")
    }

    deinit {
        // SIGKILL: the test runner's blocked signals are inherited, so SIGTERM would wait forever.
        process.stop()
        directory.remove()
    }

    /// The base URL.
    public var url: String { "https://127.0.0.1:\(port)" }

    /// Every request that got past the TLS handshake: its request line, headers and body.
    public var requests: [String] {
        ((try? String(contentsOfFile: directory.file("requests.log"), encoding: .utf8)) ?? "")
            .split(separator: "\n").map(String.init)
    }
}
