import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A throwaway CA and a certificate it signed (for 127.0.0.1 and localhost unless told otherwise),
/// made with the openssl CLI.
public struct TestCertificates: Sendable {
    /// Where the files are.
    public let directory: TemporaryDirectory
    /// The CA's certificate (PEM), to trust.
    public var caFile: String { directory.file("ca.crt") }
    /// The server's certificate (PEM).
    public var certificateFile: String { directory.file("server.crt") }
    /// The server's key (PEM).
    public var keyFile: String { directory.file("server.key") }

    /// Makes the CA and a certificate for `names` (a `subjectAltName` value).
    public init(names: String = "DNS:localhost,IP:127.0.0.1") throws {
        directory = try TemporaryDirectory()
        let d = directory
        try d.file("san.ext").write("subjectAltName=\(names)\n")
        for arguments in [
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
                d.file("ca.key"), "-out", d.file("ca.crt"), "-days", "1", "-subj", "/CN=Homeport Test CA",
            ],
            [
                "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
                d.file("server.key"),
                "-out", d.file("server.csr"), "-subj", "/CN=localhost",
            ],
            [
                "x509", "-req", "-in", d.file("server.csr"), "-CA", d.file("ca.crt"), "-CAkey", d.file("ca.key"),
                "-CAcreateserial", "-out", d.file("server.crt"), "-days", "1", "-extfile", d.file("san.ext"),
            ],
        ] {
            let run = try ServerProcess.runProgram("/usr/bin/openssl", arguments)
            guard run.status == 0 else { throw RawHTTPError("openssl \(arguments[0]) failed: \(run.error)") }
        }
    }
}

extension String {
    fileprivate func write(_ text: String) throws {
        try text.write(toFile: self, atomically: true, encoding: .utf8)
    }
}

/// Debian's nginx (`/usr/sbin/nginx`, one process, no privilege drop) terminating TLS and balancing round-robin over `upstreams`.
public final class NginxProxy: @unchecked Sendable {
    /// Its HTTPS port.
    public let port: Int
    private let process = Process()
    private let directory: TemporaryDirectory

    /// Starts nginx in front of `upstreams` (ports on 127.0.0.1), with `certificates`' pair.
    public init(upstreams: [Int], certificates: TestCertificates) throws {
        directory = try TemporaryDirectory()
        port = try RawHTTP.freePort()
        let d = directory.path
        let servers = upstreams.map { "server 127.0.0.1:\($0);" }.joined(separator: " ")
        try directory.file("nginx.conf").write(
            """
            daemon off; master_process off; worker_processes 1;
            pid \(d)/nginx.pid; error_log \(d)/error.log;
            events { worker_connections 256; }
            http {
                access_log off;
                client_body_temp_path \(d); proxy_temp_path \(d); fastcgi_temp_path \(d);
                uwsgi_temp_path \(d); scgi_temp_path \(d);
                upstream homeport { \(servers) }
                server {
                    listen 127.0.0.1:\(port) ssl;
                    ssl_certificate \(certificates.certificateFile);
                    ssl_certificate_key \(certificates.keyFile);
                    location / {
                        proxy_pass http://homeport;
                        proxy_set_header Host $host;
                        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
                        proxy_set_header X-Forwarded-Proto $scheme;
                    }
                }
            }
            """)
        try startNginx(process, directory: directory, port: port)
    }

    deinit {
        // SIGKILL: a child spawned from a test thread inherits its blocked SIGTERM.
        process.stop()
        directory.remove()
    }
}

/// Debian's nginx as a push service over TLS and HTTP/2: every `POST /push/…` is answered 201,
/// and the access log says which protocol each came in (``protocols()``).
public final class NginxPushService: @unchecked Sendable {
    /// Its HTTPS port.
    public let port: Int
    private let process = Process()
    private let directory: TemporaryDirectory

    /// Starts nginx with `certificates`' pair.
    public init(certificates: TestCertificates) throws {
        directory = try TemporaryDirectory()
        port = try RawHTTP.freePort()
        let inner = try RawHTTP.freePort()
        let d = directory.path
        // The answer comes from behind a proxy, which reads each body whole first, as a push
        // service does (an answer before the body ends would reset the stream).
        try directory.file("nginx.conf").write(
            """
            daemon off; master_process off; worker_processes 1;
            pid \(d)/nginx.pid; error_log \(d)/error.log;
            events { worker_connections 256; }
            http {
                log_format protocol '$server_protocol $request_method $uri $connection';
                client_body_temp_path \(d); proxy_temp_path \(d); fastcgi_temp_path \(d);
                uwsgi_temp_path \(d); scgi_temp_path \(d);
                server {
                    listen 127.0.0.1:\(inner);
                    access_log off;
                    location / { return 201; }
                }
                server {
                    listen 127.0.0.1:\(port) ssl http2;
                    access_log \(d)/access.log protocol;
                    ssl_certificate \(certificates.certificateFile);
                    ssl_certificate_key \(certificates.keyFile);
                    location /push/ { proxy_pass http://127.0.0.1:\(inner); }
                }
            }
            """)
        try startNginx(process, directory: directory, port: port)
    }

    /// Each request so far: `PROTOCOL METHOD PATH CONNECTION` (nginx's serial number of the
    /// connection it came on).
    public func requests() -> [String] {
        ((try? String(contentsOfFile: directory.file("access.log"), encoding: .utf8)) ?? "")
            .split(separator: "\n").map(String.init)
    }

    deinit {
        process.stop()
        directory.remove()
    }
}

/// Starts Debian's nginx with the `nginx.conf` in `directory` and waits until it listens on `port`.
private func startNginx(_ process: Process, directory: TemporaryDirectory, port: Int) throws {
    process.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
    process.arguments = ["-c", directory.file("nginx.conf"), "-p", directory.path]
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.spawn()
    guard !RawHTTP.waitUntilListening(port: port) else { return }
    throw RawHTTPError(
        "nginx did not start: \((try? String(contentsOfFile: directory.file("error.log"), encoding: .utf8)) ?? "")")
}
