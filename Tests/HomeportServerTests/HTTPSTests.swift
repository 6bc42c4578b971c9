import Foundation
import HomeportTestSupport
import HomeportWire
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Two self-signed certificates for 127.0.0.1 (`first`, `second`), and the files the server reads.
private struct CertificatePair {
    let directory: TemporaryDirectory
    var certificate: String { directory.file("server.crt") }
    var key: String { directory.file("server.key") }

    init() throws {
        directory = try TemporaryDirectory()
        for name in ["first", "second"] {
            let run = try ServerProcess.runProgram(
                "/usr/bin/openssl",
                [
                    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
                    directory.file("\(name).key"), "-out", directory.file("\(name).crt"), "-days", "1", "-subj",
                    "/CN=homeport-\(name)", "-addext", "subjectAltName=IP:127.0.0.1",
                ])
            guard run.status == 0 else { throw RawHTTPError("openssl failed: \(run.error)") }
        }
        try use("first")
    }

    /// Makes `name`'s certificate and key the ones the server's files hold.
    func use(_ name: String) throws {
        for (from, to) in [("\(name).crt", certificate), ("\(name).key", key)] {
            try? FileManager.default.removeItem(atPath: to)
            try FileManager.default.copyItem(atPath: directory.file(from), toPath: to)
        }
    }
}

/// curl over HTTPS trusting only `caFile`: the status and the certificate's subject, or `nil` when
/// the handshake or the verification fails.
private func fetch(_ port: Int, trusting caFile: String) throws -> (status: Int, subject: String)? {
    let run = try ServerProcess.runProgram(
        "/usr/bin/curl",
        ["-sv", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", caFile, "https://127.0.0.1:\(port)/healthz"])
    guard run.status == 0, let status = Int(run.output) else { return nil }
    let subject = run.error.split(separator: "\n").first { $0.contains("subject:") }.map(String.init) ?? ""
    return (status, subject)
}

@Suite("HTTPS of its own: libmicrohttpd's TLS, and a certificate renewed without a dropped connection", .tags(.process))
struct HTTPSTests {
    @Test("serves HTTPS; SIGHUP renews the certificate; an open connection carries on; a bad renewal changes nothing")
    func httpsAndReload() throws {
        let certificates = try CertificatePair()
        defer { certificates.directory.remove() }
        let data = try TemporaryDirectory()
        defer { data.remove() }
        let server = try ServerProcess(serve: [
            "--database", "sqlite:" + data.file("h.sqlite"), "--outbox", data.file("outbox"),
            "--tls-cert", certificates.certificate, "--tls-key", certificates.key,
        ])
        #expect(server.banner.contains("https://127.0.0.1:"))
        let first = certificates.directory.file("first.crt")
        let second = certificates.directory.file("second.crt")
        let answer = try fetch(server.port, trusting: first)
        #expect(answer?.status == 200 && answer?.subject.contains("homeport-first") == true)
        // Plain HTTP on the HTTPS port is not served.
        #expect((try? RawHTTP.request(port: server.port, path: "/healthz", timeout: 3)) == nil)

        // A client holds a keep-alive connection across the renewal.
        let go = data.file("go")
        let asked = data.file("asked")
        let script = """
            import socket, ssl, sys, os, time
            context = ssl.create_default_context(cafile=sys.argv[2])
            sock = context.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1]))), server_hostname="127.0.0.1")
            def ask():
                sock.sendall(b"GET /healthz HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
                data = b""
                while b"\\r\\n\\r\\n" not in data or not data.endswith(b"}"):
                    data += sock.recv(4096)
                return data.split(b" ")[1].decode()
            print(ask(), flush=True)
            open(sys.argv[4], "w").close()
            while not os.path.exists(sys.argv[3]): time.sleep(0.02)
            print(ask(), flush=True)
            """
        let kept = DispatchSemaphore(value: 0)
        let keptOutput = LockedBox("")
        Thread.detachNewThread {
            let run = try? ServerProcess.runProgram(
                "/usr/bin/python3", ["-c", script, String(server.port), first, go, asked], timeout: 30)
            keptOutput.value = (run?.output ?? "") + (run?.error ?? "")
            kept.signal()
        }
        // Once it has its first answer, renew: the files now hold the second pair; SIGHUP.
        eventually { FileManager.default.fileExists(atPath: asked) }
        try certificates.use("second")
        kill(server.pid, SIGHUP)
        var renewed: (status: Int, subject: String)?
        try eventually(timeout: .seconds(5), every: .milliseconds(50)) {
            renewed = try fetch(server.port, trusting: second)
            return renewed != nil
        }
        #expect(renewed?.status == 200 && renewed?.subject.contains("homeport-second") == true)
        // Every new connection is the new daemon's: the old one, which still holds the kept-alive
        // connection and hears of new ones, accepts none (were it to, it would win about half).
        let oldCertificate = try (0..<12).compactMap { _ in try fetch(server.port, trusting: first) }
        #expect(oldCertificate.isEmpty, "new connections get the new certificate: \(oldCertificate)")
        _ = FileManager.default.createFile(atPath: go, contents: nil)
        #expect(kept.wait(timeout: .now() + 20) == .success)
        #expect(
            keptOutput.value.split(separator: "\n") == ["200", "200"],
            "the open connection carried on: \(keptOutput.value)")

        // A broken renewal is logged and changes nothing.
        try "not a certificate".write(toFile: certificates.certificate, atomically: true, encoding: .utf8)
        kill(server.pid, SIGHUP)
        usleep(300_000)
        #expect(try fetch(server.port, trusting: second)?.status == 200)
        #expect(server.standardError.contains("kept the TLS certificate in use"))
        #expect(server.stop() == 0)
    }

    @Test(
        "HTTPS offers TLS 1.2 and 1.3 with forward-secret AEAD suites only, and says HSTS; --tls-priority changes the offer"
    )
    func modernTLS() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // An RSA key: the only kind static-RSA suites could use.
        let made = try ServerProcess.runProgram(
            "/usr/bin/openssl",
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", directory.file("k.pem"), "-out",
                directory.file("c.pem"), "-days", "1", "-subj", "/CN=homeport", "-addext",
                "subjectAltName=IP:127.0.0.1",
            ])
        #expect(made.status == 0)
        /// Whether a handshake with `arguments` (openssl s_client's) succeeds.
        func handshakes(_ port: Int, _ arguments: [String]) throws -> Bool {
            try ServerProcess.runProgram(
                "/usr/bin/openssl", ["s_client", "-connect", "127.0.0.1:\(port)"] + arguments, timeout: 20
            ).status == 0
        }
        let old = [
            ["-tls1_1", "-cipher", "DEFAULT:@SECLEVEL=0"],  // TLS 1.1
            ["-tls1_2", "-cipher", "AES128-SHA:@SECLEVEL=0"],  // static RSA, CBC, SHA-1
            ["-tls1_2", "-cipher", "ECDHE-RSA-AES128-SHA:@SECLEVEL=0"],  // CBC, SHA-1
        ]
        for priority in [nil, "NORMAL"] {
            let server = try ServerProcess(
                serve: [
                    "--database", "sqlite:" + directory.file("h.sqlite"), "--tls-cert", directory.file("c.pem"),
                    "--tls-key", directory.file("k.pem"), "--signup", "open",
                ] + (priority.map { ["--tls-priority", $0] } ?? []))
            for arguments in old {
                #expect(
                    try handshakes(server.port, arguments) == (priority == "NORMAL"),
                    "\(priority ?? "default"): \(arguments)")
            }
            #expect(try handshakes(server.port, ["-tls1_2", "-cipher", "ECDHE-RSA-AES128-GCM-SHA256"]))
            #expect(try handshakes(server.port, ["-tls1_3"]))
            let head = try ServerProcess.runProgram(
                "/usr/bin/curl", ["-sk", "-D", "-", "-o", "/dev/null", "https://127.0.0.1:\(server.port)/healthz"])
            #expect(head.output.lowercased().contains("strict-transport-security: max-age=31536000"))
            if priority == nil {
                // Forward auth's answer is prepared once per session: HTTPS's field is in it every time.
                let signup = try ServerProcess.runProgram(
                    "/usr/bin/curl",
                    [
                        "-sk", "-H", "Content-Type: application/json", "-d",
                        #"{"email":"ada@example.com","password":"correct horse battery"}"#,
                        "https://127.0.0.1:\(server.port)\(AllauthAppPath.base)/\(AllauthAppPath.signup)",
                    ])
                let token = try #require(
                    (try JSONSerialization.jsonObject(with: Data(signup.output.utf8)) as? [String: Any])
                        .flatMap { $0["meta"] as? [String: Any] }?["session_token"] as? String)
                for _ in 0..<2 {
                    let forward = try ServerProcess.runProgram(
                        "/usr/bin/curl",
                        [
                            "-sk", "-D", "-", "-o", "/dev/null", "-H", "\(HomeportHeader.sessionToken): \(token)",
                            "https://127.0.0.1:\(server.port)\(HomeportPath.authForward)",
                        ])
                    #expect(forward.output.hasPrefix("HTTP/1.1 200"), "\(forward.output)")
                    #expect(forward.output.lowercased().contains("strict-transport-security: max-age=31536000"))
                    #expect(forward.output.lowercased().contains("x-homeport-account-email: ada@example.com"))
                }
            }
            #expect(server.stop() == 0)
        }
        // Over plain HTTP, no HSTS (a browser would ignore it, and a proxy in front says its own).
        let plain = try ServerProcess(serve: ["--database", "sqlite:" + directory.file("h.sqlite")])
        defer { plain.stop() }
        #expect(try RawHTTP.request(port: plain.port, path: "/healthz").header("Strict-Transport-Security") == nil)
        let lone = try ServerProcess.run(["serve", "--listen", "127.0.0.1:0", "--tls-priority", "NORMAL"], timeout: 20)
        #expect(lone.status == 2 && lone.error.contains("--tls-priority needs --tls-cert"))
        let bogus = try ServerProcess.run(
            [
                "serve", "--listen", "127.0.0.1:0", "--database", "sqlite:" + directory.file("h.sqlite"), "--tls-cert",
                directory.file("c.pem"), "--tls-key", directory.file("k.pem"), "--tls-priority", "NO-SUCH-THING",
            ], timeout: 20)
        #expect(bogus.status != 0 && bogus.error.contains("--tls-priority"), "\(bogus.error)")
    }

    @Test(
        "a TLS key, a mail password file or a provider's client secret every user may open is warned of at start, by name; 0600 and 0640 are not"
    )
    func exposedSecretFiles() throws {
        let certificates = try CertificatePair()
        defer { certificates.directory.remove() }
        let data = try TemporaryDirectory()
        defer { data.remove() }
        let database = "sqlite:" + data.file("s.sqlite")
        let password = data.file("mail-password")
        let secret = data.file("client-secret")
        try "a mail password\n".write(toFile: password, atomically: true, encoding: .utf8)
        try "a client secret\n".write(toFile: secret, atomically: true, encoding: .utf8)
        func mode(_ path: String, _ mode: mode_t) { #expect(chmod(path, mode) == 0) }
        mode(secret, 0o604)
        let added = try ServerProcess.run([
            "oidc", "add", "idp", "--issuer", "https://auth.example.com", "--client-id", "web",
            "--client-secret-file", secret, "--database", database,
        ])
        #expect(added.status == 0, "\(added.error)")
        #expect(added.error.contains("every user of this machine may open the client secret file \(secret) (mode 604)"))
        let serve = [
            "--database", database, "--outbox", data.file("outbox"), "--tls-cert", certificates.certificate,
            "--tls-key", certificates.key, "--mail-url", "smtp://127.0.0.1:9", "--mail-password-file", password,
        ]
        /// What a server started with the files as they are warned of.
        func warnings() throws -> [String] {
            let server = try ServerProcess(serve: serve)
            defer { _ = server.stop() }
            return server.standardError.split(separator: "\n").map(String.init).filter {
                $0.contains("every user of this machine may open")
            }
        }
        mode(certificates.key, 0o644)
        // Open to others' writing alone is warned of too: a secret others can replace.
        mode(password, 0o602)
        let warned = try warnings()
        #expect(warned.count == 3, "\(warned)")
        for (what, path, shown) in [
            ("TLS key (--tls-key)", certificates.key, "644"),
            ("mail password file (--mail-password-file)", password, "602"),
            ("client secret file of the identity provider idp", secret, "604"),
        ] {
            #expect(warned.contains { $0.contains("the \(what) \(path) (mode \(shown))") }, "\(what): \(warned)")
        }
        // Nothing of the secrets themselves in the log.
        #expect(!warned.joined().contains("a mail password") && !warned.joined().contains("a client secret"))
        // A push gateway's TLS key, the same.
        let apnsKey = data.file("apns.p8")
        let made = try ServerProcess.runProgram(
            "/usr/bin/openssl", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", apnsKey])
        #expect(made.status == 0, "\(made.error)")
        mode(apnsKey, 0o600)
        let gateway = try ServerProcess(
            command: ["gateway", "serve"],
            serve: [
                "--database", "sqlite:" + data.file("g.sqlite"), "--apns-topic", "net.example.books", "--apns-key-file",
                apnsKey, "--apns-key-id", "ABCDEFGHIJ", "--apns-team-id", "ABCDEFGHIJ", "--tls-cert",
                certificates.certificate, "--tls-key", certificates.key,
            ])
        #expect(
            gateway.standardError.contains(
                "every user of this machine may open the TLS key (--tls-key) \(certificates.key) (mode 644)"),
            "\(gateway.standardError)")
        _ = gateway.stop()
        mode(certificates.key, 0o600)
        mode(password, 0o640)
        mode(secret, 0o640)
        #expect(try warnings().isEmpty)
    }

    @Test("--tls-cert and --tls-key go together, and must be PEM files")
    func usage() throws {
        let certificates = try CertificatePair()
        defer { certificates.directory.remove() }
        for (arguments, expected) in [
            (["--tls-cert", certificates.certificate], "go together"),
            (["--tls-cert", certificates.directory.file("missing.crt"), "--tls-key", certificates.key], "cannot read"),
            (["--tls-cert", certificates.key, "--tls-key", certificates.key], "not a PEM certificate"),
        ] {
            let run = try ServerProcess.run(["serve", "--listen", "127.0.0.1:0"] + arguments, timeout: 20)
            #expect(run.status == 2, "\(arguments)")
            #expect(run.error.contains(expected), "\(run.error)")
        }
    }
}
