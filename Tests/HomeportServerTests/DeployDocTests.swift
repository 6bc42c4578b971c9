import Foundation
import HomeportCrypto
import HomeportLogging
import HomeportServer
import HomeportStorage
import HomeportTestSupport
import HomeportWire
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The page's forward-auth sites, started: nginx over HTTPS with `certificates` and Caddy over
/// plain HTTP, each in front of Homeport (`nginxUpstream`, a `server …;` line, and
/// `caddyUpstream`, an address) and of the product on 127.0.0.1:`productPort`.
private func forwardAuthProxies(
    nginxUpstream: String, caddyUpstream: String, productPort: Int, certificates: TestCertificates,
    in scratch: TemporaryDirectory
) throws -> (nginx: Process, nginxPort: Int, caddy: Process, caddyPort: Int) {
    let nginxPort = try RawHTTP.freePort()
    let site = try block("nginx", "forward-auth")
        .replacingOccurrences(of: "server 127.0.0.1:8080;", with: nginxUpstream)
        .replacingOccurrences(of: "127.0.0.1:9000", with: "127.0.0.1:\(productPort)")
        .replacingOccurrences(of: "listen 443 ssl;", with: "listen 127.0.0.1:\(nginxPort) ssl;")
        .replacingOccurrences(of: "/etc/ssl/journal.example.net.crt", with: certificates.certificateFile)
        .replacingOccurrences(of: "/etc/ssl/journal.example.net.key", with: certificates.keyFile)
    let nginx = try ReverseProxy.nginx(site, port: nginxPort, in: scratch)
    let forwardSite = try block("caddy", "forward-auth")
    do {
        let (caddy, caddyPort) = try ReverseProxy.caddy(in: scratch) { port in
            forwardSite.replacingOccurrences(of: "journal.example.net {", with: "http://127.0.0.1:\(port) {")
                .replacingOccurrences(of: "127.0.0.1:8080", with: caddyUpstream)
                .replacingOccurrences(of: "127.0.0.1:9000", with: "127.0.0.1:\(productPort)")
        }
        return (nginx, nginxPort, caddy, caddyPort)
    } catch {
        nginx.stop()
        throw error
    }
}

private func block(_ language: String, _ label: String = "") throws -> String {
    guard
        let found = try fencedBlocks(inMarkdown: "docs/deploy.md").first(where: {
            $0.language == language && $0.label == label
        })
    else {
        throw RawHTTPError("docs/deploy.md has no ```\(language) \(label) block")
    }
    return found.text
}

/// Runs a shell block with `environment`, `homeport-server` on the PATH.
private func runShell(_ script: String, _ environment: [String: String]) throws -> (
    status: Int32, output: String, error: String
) {
    let binaries = (ServerProcess.binary as NSString).deletingLastPathComponent
    let path = binaries + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
    return try ServerProcess.runProgram(
        "/bin/bash", ["-euo", "pipefail", "-c", script], environment: environment.merging(["PATH": path]) { $1 })
}

@Suite("docs/deploy.md: every block is checked or run", .serialized, .tags(.process, .postgres, .interop, .docs))
struct DeployDocTests {
    @Test("every block of the page is one of the checked kinds")
    func everyBlockChecked() throws {
        let kinds = try fencedBlocks(inMarkdown: "docs/deploy.md").map { "\($0.language) \($0.label)" }
        #expect(
            Set(kinds) == [
                "systemd ", "nginx ", "caddy ", "nginx forward-auth", "caddy forward-auth", "yaml traefik",
                "sh backup", "sh restore", "sh clone", "sh postgres", "sh gateway-serve", "sh gateway",
                "sh lan-beside", "sh lan-alone", "sh oidc",
            ],
            "\(kinds)")
    }

    @Test("the systemd unit verifies")
    func systemdUnit() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let unit = try block("systemd").replacingOccurrences(
            of: "/usr/local/bin/homeport-server", with: ServerProcess.binary)
        try unit.write(toFile: directory.file("homeport.service"), atomically: true, encoding: .utf8)
        let run = try ServerProcess.runProgram(
            "/usr/bin/systemd-analyze", ["verify", directory.file("homeport.service")])
        #expect(run.status == 0, "\(run.error)")
        #expect(!run.error.contains("Unknown"), "\(run.error)")
    }

    @Test("the nginx sites pass nginx -t", arguments: ["", "forward-auth"])
    func nginxSite(label: String) throws {
        let certificates = try TestCertificates()
        defer { certificates.directory.remove() }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let site = try block("nginx", label)
            .replacingOccurrences(of: "/etc/ssl/books.example.net.crt", with: certificates.certificateFile)
            .replacingOccurrences(of: "/etc/ssl/books.example.net.key", with: certificates.keyFile)
            .replacingOccurrences(of: "/etc/ssl/journal.example.net.crt", with: certificates.certificateFile)
            .replacingOccurrences(of: "/etc/ssl/journal.example.net.key", with: certificates.keyFile)
        let configuration = """
            pid \(directory.path)/nginx.pid; error_log \(directory.path)/error.log;
            events {}
            http { access_log off; \(site) }
            """
        try configuration.write(toFile: directory.file("nginx.conf"), atomically: true, encoding: .utf8)
        let run = try ServerProcess.runProgram(
            "/usr/sbin/nginx", ["-t", "-c", directory.file("nginx.conf"), "-p", directory.path])
        #expect(run.status == 0, "\(run.error)")
    }

    @Test("the Caddy sites validate", arguments: ["", "forward-auth"])
    func caddySite(label: String) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try block("caddy", label).write(toFile: directory.file("Caddyfile"), atomically: true, encoding: .utf8)
        let run = try ServerProcess.runProgram(
            "/usr/bin/caddy", ["validate", "--config", directory.file("Caddyfile"), "--adapter", "caddyfile"],
            environment: ["HOME": directory.path, "XDG_DATA_HOME": directory.path, "XDG_CONFIG_HOME": directory.path])
        #expect(run.status == 0, "\(run.error)")
    }

    @Test(
        "behind the documented nginx and Caddy sites, to a port or to a Unix socket, a client cannot name its own address: forged Forwarded and X-Forwarded-For spread no budget",
        arguments: [false, true])
    func proxiesNameTheClient(overSocket: Bool) throws {
        let data = try TemporaryDirectory()
        defer { data.remove() }
        let socket = data.file("homeport.sock")
        let server = try ServerProcess(
            serve: [
                "--database", "sqlite:" + data.file("h.sqlite"), "--signup", "open", "--password-iterations", "1000",
                "--rate-limits", "login-per-address=4/600",
            ]
                + (overSocket
                    ? ["--listen", socket, "--public-url", "https://books.example.net"]
                    : ["--trusted-proxies", "127.0.0.1", "--max-connections-per-address", "0"]))
        defer { server.stop() }
        let nginxUpstream = overSocket ? "server unix:\(socket);" : "server 127.0.0.1:\(server.port);"
        let caddyUpstream = overSocket ? "unix/\(socket)" : "127.0.0.1:\(server.port)"
        let certificates = try TestCertificates()
        defer { certificates.directory.remove() }
        let scratch = try TemporaryDirectory()
        defer { scratch.remove() }

        // nginx, the page's site with this machine's ports and files.
        let nginxPort = try RawHTTP.freePort()
        let site = try block("nginx")
            .replacingOccurrences(of: "server 127.0.0.1:8080;", with: nginxUpstream)
            .replacingOccurrences(of: "listen 443 ssl;", with: "listen 127.0.0.1:\(nginxPort) ssl;")
            .replacingOccurrences(of: "/etc/ssl/books.example.net.crt", with: certificates.certificateFile)
            .replacingOccurrences(of: "/etc/ssl/books.example.net.key", with: certificates.keyFile)
        let nginx = try ReverseProxy.nginx(site, port: nginxPort, in: scratch)
        defer { nginx.stop() }

        // Caddy, the page's site on a plain-HTTP address of this machine (its admin endpoint off).
        let caddySite = try block("caddy")
        let (caddy, caddyPort) = try ReverseProxy.caddy(in: scratch) { port in
            caddySite.replacingOccurrences(of: "books.example.net {", with: "http://127.0.0.1:\(port) {")
                .replacingOccurrences(of: "127.0.0.1:8080", with: caddyUpstream)
        }
        defer { caddy.stop() }

        let signup = try Self.signIn(
            "http://127.0.0.1:\(caddyPort)" + AllauthAppPath.base + "/" + AllauthAppPath.signup, from: "127.0.0.1")
        #expect(signup.status == 200, "\(signup)")
        for (proxy, attacker, bystander) in [
            ("https://127.0.0.1:\(nginxPort)", "127.0.0.2", "127.0.0.3"),
            ("http://127.0.0.1:\(caddyPort)", "127.0.0.4", "127.0.0.5"),
        ] {
            let login = proxy + AllauthAppPath.base + "/" + AllauthAppPath.login
            // Each sign-in names another client, in both headers, each sent twice.
            let statuses = try (1...6).map { attempt in
                try Self.signIn(
                    login, from: attacker, caFile: certificates.caFile,
                    headers: [
                        "Forwarded: for=198.51.100.\(attempt)", "Forwarded: for=\"[2001:db8::\(attempt)]\"",
                        "X-Forwarded-For: 203.0.113.\(attempt)", "X-Forwarded-For: 203.0.113.\(attempt + 100)",
                    ]
                ).status
            }
            #expect(statuses == [200, 200, 200, 200, 429, 429], "\(proxy): \(statuses)")
            let bystanderStatus = try Self.signIn(login, from: bystander, caFile: certificates.caFile).status
            #expect(bystanderStatus == 200, "\(proxy): another client keeps its own budget")
        }
        let log = server.standardError { $0.contains("127.0.0.2") && $0.contains("127.0.0.4") }
        #expect(log.contains("127.0.0.2") && log.contains("127.0.0.4"), "the log names the clients")
        #expect(!log.contains("198.51.100.") && !log.contains("203.0.113.") && !log.contains("2001:db8"))
    }

    @Test(
        "a stopped Homeport (SIGSTOP) fails the product's route within the sites' 5 s, not the proxies' minute or more, through the documented nginx and Caddy sites, closed; the product hears nothing"
    )
    func forwardAuthStopped() throws {
        let data = try TemporaryDirectory()
        defer { data.remove() }
        let server = try ServerProcess(serve: [
            "--database", "sqlite:" + data.file("h.sqlite"), "--signup", "open", "--password-iterations", "1000",
            "--trusted-proxies", "127.0.0.1", "--max-connections-per-address", "0",
        ])
        defer { server.stop() }
        let certificates = try TestCertificates()
        defer { certificates.directory.remove() }
        let scratch = try TemporaryDirectory()
        defer { scratch.remove() }
        // The product: a listener that records whatever reaches it.
        let product = try RecordingListener(
            behaviour: .routes(["/api/v1/journal": .init(200, ["Content-Type": "text/plain"], "ok")]))

        let (nginx, nginxPort, caddy, caddyPort) = try forwardAuthProxies(
            nginxUpstream: "server 127.0.0.1:\(server.port);", caddyUpstream: "127.0.0.1:\(server.port)",
            productPort: product.port, certificates: certificates, in: scratch)
        defer {
            nginx.stop()
            caddy.stop()
        }

        let fronts = ["https://127.0.0.1:\(nginxPort)", "http://127.0.0.1:\(caddyPort)"]
        var tokens: [String] = []
        for (index, front) in fronts.enumerated() {
            let signup = try Curl.call(
                front + AllauthAppPath.base + "/" + AllauthAppPath.signup, method: "POST", caFile: certificates.caFile,
                json: #"{"email":"reader\#(index)@example.com","password":"correct horse battery"}"#)
            let token = try #require(
                ((try? JSONSerialization.jsonObject(with: Data(signup.body.utf8))) as? [String: Any])
                    .flatMap { ($0["meta"] as? [String: Any])?["session_token"] as? String })
            let open = try Curl.call(
                front + "/api/v1/journal", caFile: certificates.caFile, headers: ["X-Session-Token: \(token)"])
            #expect(open.status == 200, "\(front) answers while Homeport does")
            tokens.append(token)
        }
        let heardBefore = product.requests.count

        kill(server.pid, SIGSTOP)
        defer { kill(server.pid, SIGCONT) }
        for (front, token) in zip(fronts, tokens) {
            let started = ContinuousClock.now
            let stopped = try Curl.call(
                front + "/api/v1/journal", caFile: certificates.caFile, headers: ["X-Session-Token: \(token)"])
            let took = ContinuousClock.now - started
            #expect(stopped.status >= 500, "\(front): closed, not open: \(stopped.status)")
            // The sites' 5 s, plus a curl process and its TLS handshake on a machine the whole
            // suite keeps busy (6.2 s seen there); nginx's default would be 60 s, Caddy's unbounded.
            #expect(took < .seconds(10), "\(front) answered after \(took)")
        }
        #expect(product.requests.count == heardBefore, "the product heard nothing while Homeport was stopped")
        kill(server.pid, SIGCONT)
        let again = try Curl.call(
            fronts[0] + "/api/v1/journal", caFile: certificates.caFile, headers: ["X-Session-Token: \(tokens[0])"])
        #expect(again.status == 200, "Homeport back: the route is open again")
    }

    @Test(
        "forward auth behind the documented nginx and Caddy sites, to a port or to a Unix socket: the product hears the account, never a client's own claim or the token; a signed-out call is the API's 401",
        arguments: [false, true])
    func forwardAuthSites(overSocket: Bool) throws {
        let data = try TemporaryDirectory()
        defer { data.remove() }
        let socket = data.file("homeport.sock")
        let server = try ServerProcess(
            serve: [
                "--database", "sqlite:" + data.file("h.sqlite"), "--signup", "open", "--password-iterations", "1000",
            ]
                + (overSocket
                    ? ["--listen", socket, "--public-url", "https://journal.example.net"]
                    : ["--trusted-proxies", "127.0.0.1", "--max-connections-per-address", "0"]))
        defer { server.stop() }
        // The page's own rule for a socket: nginx's server line, Caddy's address.
        let nginxUpstream = overSocket ? "server unix:\(socket);" : "server 127.0.0.1:\(server.port);"
        let caddyUpstream = overSocket ? "unix/\(socket)" : "127.0.0.1:\(server.port)"
        if overSocket {
            let page = try String(contentsOfFile: repositoryFile("docs/deploy.md"), encoding: .utf8)
                .split(whereSeparator: \.isWhitespace).joined(separator: " ")
            let nginxRule = page.contains(
                "write `server unix:/run/homeport/homeport.sock;` in place of `server 127.0.0.1:8080;`")
            let caddyRule = page.contains("write `unix//run/homeport/homeport.sock` wherever it says `127.0.0.1:8080`")
            #expect(nginxRule && caddyRule, "docs/deploy.md states the rule this test follows")
        }
        let certificates = try TestCertificates()
        defer { certificates.directory.remove() }
        let scratch = try TemporaryDirectory()
        defer { scratch.remove() }

        // The product: answers /api/v1/journal with the header fields it was given, and counts its requests.
        let productPort = try RawHTTP.freePort()
        let product = Process()
        product.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        product.arguments = [
            "-c",
            """
            import http.server, json, sys
            class Handler(http.server.BaseHTTPRequestHandler):
                def do_GET(self):
                    with open(sys.argv[2], 'a') as f: f.write(self.path + '\\n')
                    body = json.dumps(list(self.headers.items())).encode()
                    self.send_response(200)
                    self.send_header('Content-Type', 'application/json')
                    self.send_header('Content-Length', str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                def log_message(self, *args): pass
            http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), Handler).serve_forever()
            """,
            String(productPort), scratch.file("product.log"),
        ]
        try product.spawn()
        defer { product.stop() }
        #expect(RawHTTP.waitUntilListening(port: productPort))

        let (nginx, nginxPort, caddy, caddyPort) = try forwardAuthProxies(
            nginxUpstream: nginxUpstream, caddyUpstream: caddyUpstream, productPort: productPort,
            certificates: certificates, in: scratch)
        defer {
            nginx.stop()
            caddy.stop()
        }

        // A client's own claims, in the real spelling and in the ones CGI-style stacks merge with it,
        // and the web door's cookies.
        let forged = [
            "X-Homeport-Account-Id: 999", "X-Homeport-Account-Email: eve@example.com", "X-Homeport-Session: forged",
            "X-Homeport-Account-Email-Verified: true", "X_Homeport_Account_Id: 998", "x_homeport_account_email: eve@x",
            "X-Homeport_Account-Id: 997", "X_HOMEPORT_ACCOUNT_EMAIL_VERIFIED: true", "X-Homeport-Groups: admin",
            "X_Homeport_Groups: admin",
            "Cookie: homeport_session=websession; homeport_csrf=csrf; theirs=1",
        ]
        for (index, (front, allowHTTP)) in [
            ("https://127.0.0.1:\(nginxPort)", false), ("http://127.0.0.1:\(caddyPort)", true),
        ]
        .enumerated() {
            let email = "reader\(index)@example.com"
            let signup = try Curl.call(
                front + AllauthAppPath.base + "/" + AllauthAppPath.signup, method: "POST", caFile: certificates.caFile,
                json: #"{"email":"\#(email)","password":"correct horse battery"}"#)
            #expect(signup.status == 200, "\(front): \(signup.body)")
            let token = try #require(
                ((try? JSONSerialization.jsonObject(with: Data(signup.body.utf8))) as? [String: Any])
                    .flatMap { ($0["meta"] as? [String: Any])?["session_token"] as? String })
            // Without a group the field is absent, and a client's own never passes; with groups, Homeport's.
            let answer = try Curl.call(
                front + "/api/v1/journal", caFile: certificates.caFile,
                headers: forged + ["\(HomeportHeader.sessionToken): \(token)"])
            let groupless = ((try? JSONSerialization.jsonObject(with: Data(answer.body.utf8))) as? [[String]] ?? [])
                .filter { $0[0].lowercased() == "x-homeport-groups" }.map { $0[1] }
            #expect(groupless.allSatisfy(\.isEmpty) && groupless.count <= 1, "\(front): none, empty: \(groupless)")
            let grouped = try ServerProcess.run(
                ["users", "groups", email, "add", "family", "--database", "sqlite:" + data.file("h.sqlite")])
            #expect(grouped.status == 0, "\(grouped.error)")
            var seen = try Curl.call(
                front + "/api/v1/journal", caFile: certificates.caFile,
                headers: forged + ["\(HomeportHeader.sessionToken): \(token)"])
            // Another process changed the groups: seen within the session cache's second.
            try eventually(every: .milliseconds(100)) {
                seen = try Curl.call(
                    front + "/api/v1/journal", caFile: certificates.caFile,
                    headers: forged + ["\(HomeportHeader.sessionToken): \(token)"])
                return seen.body.contains("family")
            }
            #expect(seen.status == 200, "\(front): \(seen.body)")
            let fields = (try? JSONSerialization.jsonObject(with: Data(seen.body.utf8))) as? [[String]] ?? []
            let heard = Dictionary(fields.map { ($0[0].lowercased(), $0[1]) }, uniquingKeysWith: { first, _ in first })
            #expect(heard["x-homeport-account-email"] == email, "\(front): \(heard)")
            #expect(heard["x-homeport-account-id"].flatMap(Int.init) != nil && heard["x-homeport-account-id"] != "999")
            #expect(heard["x-homeport-account-email-verified"] == "false", "\(front): \(heard)")
            #expect(heard["x-homeport-session"]?.count == 32, "\(front): \(heard)")
            #expect(heard["x-homeport-groups"] == "family", "\(front): \(heard)")
            #expect(heard["x-session-token"] == nil && !seen.body.contains(token), "the token stays at the proxy")
            // Each of Homeport's fields once, in its own spelling: no variant a CGI stack would merge.
            let homeport = fields.filter {
                $0[0].lowercased().replacingOccurrences(of: "_", with: "-").hasPrefix("x-homeport")
            }
            #expect(
                homeport.map { $0[0].lowercased() }.sorted()
                    == HomeportHeader.forwardAuthFields.map { $0.lowercased() }.sorted(), "\(front): \(homeport)")
            #expect(
                heard["cookie"] == nil, "\(front): the web door's cookies stay at the proxy: \(heard["cookie"] ?? "")")

            // Without a session: the API's own 401, and the product never hears of it.
            let before = (try? String(contentsOfFile: scratch.file("product.log"), encoding: .utf8)) ?? ""
            let stranger = try Curl.call(front + "/api/v1/journal", caFile: certificates.caFile, headers: forged)
            #expect(stranger.status == 401)
            #expect(stranger.body.contains(#""code":"not_authenticated""#), "\(front): \(stranger.body)")
            #expect(((try? String(contentsOfFile: scratch.file("product.log"), encoding: .utf8)) ?? "") == before)

            // The CLI, as a person uses it: sign in at the site, then call the product's route.
            let home = try TemporaryDirectory()
            defer { home.remove() }
            let environment = ["HOMEPORT_HOME": home.path, "HOMEPORT_NETWORK_PATH": "home"]
            let reach = allowHTTP ? ["--allow-http"] : ["--ca-file", certificates.caFile]
            let login = try ServerProcess.runClient(
                ["login", front, "--email", email, "--password-stdin"] + reach, environment: environment,
                input: "correct horse battery\n")
            #expect(login.status == 0, "\(front): \(login.error)")
            let api = try ServerProcess.runClient(
                ["api", front, "GET", "/api/v1/journal"] + (allowHTTP ? [] : ["--ca-file", certificates.caFile]),
                environment: environment)
            #expect(api.status == 0 && api.output.contains(email), "\(front): \(api.output) \(api.error)")

            // Signed out: the next call is the API's 401 (the CLI says signed out, exit 4).
            let logout = try Curl.call(
                front + AllauthAppPath.base + "/" + AllauthAppPath.session, method: "DELETE",
                caFile: certificates.caFile,
                headers: ["\(HomeportHeader.sessionToken): \(token)"])
            #expect(logout.status == 401)
            #expect(
                try Curl.call(
                    front + "/api/v1/journal", caFile: certificates.caFile,
                    headers: ["\(HomeportHeader.sessionToken): \(token)"]
                ).status == 401)
            let out = try ServerProcess.runClient(
                ["logout", front] + (allowHTTP ? [] : ["--ca-file", certificates.caFile]), environment: environment)
            #expect(out.status == 0, "\(out.error)")
            let after = try ServerProcess.runClient(
                ["api", front, "GET", "/api/v1/journal"] + (allowHTTP ? [] : ["--ca-file", certificates.caFile]),
                environment: environment)
            #expect(after.status == 4, "\(front): \(after.error)")
        }
    }

    @Test(
        "the Traefik example names the forward-auth route, copies the five fields onto the product's requests, and removes the token, cookies and underscore spellings"
    )
    func traefikExample() throws {
        let yaml = try block("yaml", "traefik")
        #expect(yaml.contains("address: \"http://127.0.0.1:8080\(HomeportPath.authForward)\""))
        for field in HomeportHeader.forwardAuthFields {
            #expect(yaml.contains("- \(field)"), "\(field)")
            #expect(
                yaml.contains("\(field.replacingOccurrences(of: "-", with: "_")): \"\""), "\(field) with underscores")
        }
        #expect(yaml.contains("X-Session-Token: \"\""), "the token stays at the proxy")
        #expect(yaml.contains("Cookie: \"\""), "the cookies stay at the proxy")
        #expect(yaml.contains("middlewares: [homeport-auth, no-token]"))
    }

    /// Ada's sign-in at `url`, as curl sends it from `source`, with `headers` added.
    private static func signIn(
        _ url: String, from source: String, caFile: String? = nil, headers: [String] = []
    ) throws -> (status: Int, body: String) {
        try Curl.call(
            url, method: "POST", from: source, caFile: caFile, headers: headers,
            json: #"{"email":"ada@example.com","password":"correct horse battery"}"#)
    }

    @Test("backup and restore keep the installation id; a clone gets another")
    func backupRestoreClone() throws {
        let data = try TemporaryDirectory()
        defer { data.remove() }
        let backup = try TemporaryDirectory()
        defer { backup.remove() }
        let environment = ["HOMEPORT_DATA_DIR": data.path, "BACKUP": backup.path]
        let server = try ServerProcess(
            serve: ["--signup", "open", "--password-iterations", "1000"], environment: ["HOMEPORT_DATA_DIR": data.path])
        let id = try ServerProcessTests.identity(server.port)
        // An account with two-factor sign-in: its secret is sealed with the key beside the database.
        let secret = try turnOnTOTP(server.port)
        let saved = try runShell(try block("sh", "backup"), environment)
        #expect(saved.status == 0, "\(saved.error)")
        #expect(server.stop() == 0)

        // The data is lost, key included; the backup brings the same installation back, and the
        // second factor with it.
        for file in ["homeport.sqlite", "homeport.sqlite.secrets-key"] {
            try FileManager.default.removeItem(atPath: data.file(file))
        }
        let restored = try runShell(try block("sh", "restore"), environment)
        #expect(restored.status == 0, "\(restored.error)")
        let shown = restored.output.split(separator: "\n")
        #expect(shown.first.map(String.init) == id)
        #expect(shown.dropFirst().first?.hasPrefix("key SHA256:") == true, "\(restored.output)")
        let again = try ServerProcess(serve: [], environment: ["HOMEPORT_DATA_DIR": data.path])
        #expect(try ServerProcessTests.identity(again.port) == id)
        #expect(try signInWithTOTP(again.port, secret: secret) == 200, "the restored key opens the restored secret")
        #expect(again.stop() == 0)
        // Without the key the database opens no second factor, and the server says so.
        try FileManager.default.removeItem(atPath: data.file("homeport.sqlite.secrets-key"))
        let keyless = try ServerProcess.run(
            ["serve", "--listen", "127.0.0.1:0"], environment: ["HOMEPORT_DATA_DIR": data.path], timeout: 20)
        #expect(keyless.status == 1 && keyless.error.contains("is missing"), "\(keyless.error)")
        #expect(!FileManager.default.fileExists(atPath: data.file("homeport.sqlite.secrets-key")), "no new key made")

        // A clone from the same backup is another installation.
        let clone = try TemporaryDirectory()
        defer { clone.remove() }
        for file in ["homeport.sqlite", "homeport.sqlite.secrets-key"] {
            try FileManager.default.copyItem(atPath: backup.file(file), toPath: clone.file(file))
        }
        let cloned = try runShell(try block("sh", "clone"), ["CLONE": clone.path])
        #expect(cloned.status == 0, "\(cloned.error)")
        let cloneServer = try ServerProcess(serve: ["--database", "sqlite:" + clone.file("homeport.sqlite")])
        let cloneID = try ServerProcessTests.identity(cloneServer.port)
        #expect(cloneID != id)
        #expect(cloneServer.stop() == 0)
    }

    @Test("the identity provider's commands add it as the page says, the secret in its file only")
    func oidcProvider() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let script = try block("sh", "oidc")
            .replacingOccurrences(of: "/etc/homeport/oidc-household.secret", with: directory.file("secret"))
            .replacingOccurrences(of: "ISSUER", with: "https://auth.example.net/application/o/homeport/")
            .replacingOccurrences(of: "WEB-CLIENT-ID", with: "homeport-web")
            .replacingOccurrences(of: "APP-CLIENT-ID", with: "homeport-app")
        let database = "sqlite:" + directory.file("homeport.sqlite")
        let run = try runShell(script, ["HOMEPORT_DATABASE": database])
        #expect(run.status == 0, "\(run.error)")
        let secret = try String(contentsOfFile: directory.file("secret"), encoding: .utf8)
        #expect(secret == "THE-WEB-CLIENT-SECRET\n")
        let mode = try FileManager.default.attributesOfItem(atPath: directory.file("secret"))[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let listed = try ServerProcess.run(["oidc", "list", "--json", "--database", database])
        #expect(listed.output.contains("homeport-app") && listed.output.contains("Our household"), "\(listed)")
        #expect(!listed.output.contains("THE-WEB-CLIENT-SECRET"))
    }

    /// Signs `ada@example.com` up on the server at `port` and turns TOTP on; its secret.
    func turnOnTOTP(_ port: Int) throws -> [UInt8] {
        let base = "/_allauth/app/v1/"
        func post(_ path: String, _ json: [String: String], _ token: String?) throws -> RawResponse {
            try RawHTTP.request(
                port: port, method: "POST", path: base + path,
                headers: [("Content-Type", "application/json")] + (token.map { [("X-Session-Token", $0)] } ?? []),
                body: try JSONSerialization.data(withJSONObject: json))
        }
        let signup = try post("auth/signup", ["email": "ada@example.com", "password": "correct horse battery"], nil)
        let token = try #require(signup.sessionToken)
        let offer = try RawHTTP.request(
            port: port, path: base + "account/authenticators/totp", headers: [("X-Session-Token", token)])
        let text = try #require((offer.jsonObject?["meta"] as? [String: Any])?["secret"] as? String)
        let secret = try #require(Base32.decode(text))
        #expect(try post("auth/reauthenticate", ["password": "correct horse battery"], token).status == 200)
        let code = OneTimeCode.code(secret: secret, step: OneTimeCode.step(at: Int64(Date().timeIntervalSince1970)))
        #expect(try post("account/authenticators/totp", ["code": code], token).status == 200)
        return secret
    }

    /// Signs `ada@example.com` in with the password and then a TOTP code of the next step; the
    /// second answer's status.
    func signInWithTOTP(_ port: Int, secret: [UInt8]) throws -> Int {
        let base = "/_allauth/app/v1/"
        let login = try RawHTTP.request(
            port: port, method: "POST", path: base + "auth/login", headers: [("Content-Type", "application/json")],
            body: Data(#"{"email": "ada@example.com", "password": "correct horse battery"}"#.utf8))
        let pending = try #require(login.sessionToken)
        let code = OneTimeCode.code(secret: secret, step: OneTimeCode.step(at: Int64(Date().timeIntervalSince1970)) + 1)
        return try RawHTTP.request(
            port: port, method: "POST", path: base + "auth/2fa/authenticate",
            headers: [("Content-Type", "application/json"), ("X-Session-Token", pending)],
            body: Data(#"{"code": "\#(code)"}"#.utf8)
        ).status
    }

    @Test("the push gateway's command serves HTTPS with the page's flags, and its enrolment prints a credential")
    func pushGateway() throws {
        let standIn = try APNsStandIn()
        let certificates = try TestCertificates()
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // In this order: the key's path before its id.
        let replacements = [
            ("0.0.0.0:8443", "127.0.0.1:0"), ("127.0.0.1:9101", "127.0.0.1:0"),
            ("/etc/homeport-gateway/tls.pem", certificates.certificateFile),
            ("/etc/homeport-gateway/tls.key", certificates.keyFile), ("/var/lib/homeport-gateway", directory.path),
            ("/etc/homeport-gateway/AuthKey_ABC123DEFG.p8", standIn.keyFile), ("ABC123DEFG", APNsStandIn.keyID),
            ("DEF123GHIJ", APNsStandIn.teamID), ("net.example.books", APNsStandIn.topic),
        ]
        var command = try block("sh", "gateway-serve").replacingOccurrences(of: "\\\n", with: " ")
        for (from, to) in replacements { command = command.replacingOccurrences(of: from, with: to) }
        let words = command.split(whereSeparator: \.isWhitespace).map(String.init)
        #expect(Array(words.prefix(3)) == ["homeport-server", "gateway", "serve"])
        let gateway = try ServerProcess(command: ["gateway", "serve"], serve: Array(words.dropFirst(3)))
        #expect(gateway.banner.contains("homeport-server gateway listening on https://127.0.0.1:"), "\(gateway.banner)")
        #expect(gateway.stop() == 0)

        // The server's side: a server started with a gateway and its credential file.
        var push = PushSettings(topic: APNsStandIn.topic)
        push.gateway = PushGatewaySettings(
            url: "https://push.example.net:8443",
            credential: try PushGatewaySettings.credential(fromFile: directory.file("push-gateway.credential")))
        let (database, cleanUp) = try Backend.sqlite.makeDatabaseURL()
        defer { cleanUp() }
        var configuration = ServerConfiguration(listen: .init(host: "127.0.0.1", port: 0), database: database)
        configuration.push = push
        let server = try HomeportApplication(
            configuration: configuration, logger: Logger(label: "test", minimumLevel: .error, sink: MemoryLogSink()))
        try server.start()
        defer { server.shutdown() }
        let enrol = try block("sh", "gateway").replacingOccurrences(
            of: "/var/lib/homeport-gateway", with: directory.path
        )
        .replacingOccurrences(of: "https://books.example.net", with: "http://127.0.0.1:\(server.port)")
        let run = try runShell(enrol, [:])
        #expect(run.status == 0, "\(run.error)")
        let instance = try server.identity.instanceID().description
        let list = try ServerProcess.run([
            "gateway", "servers", "list", "--database", "sqlite:" + directory.file("gateway.sqlite"),
        ])
        #expect(list.output.contains("ada-home  \(instance)  http://127.0.0.1:\(server.port)"), "\(list.output)")
    }

    @Test(
        "the LAN commands serve the installation's certificate, beside a public listener or alone",
        arguments: ["lan-beside", "lan-alone"])
    func lanCommands(label: String) throws {
        let data = try TemporaryDirectory()
        defer { data.remove() }
        let lanPort = try RawHTTP.freePort()
        var command = try block("sh", label).replacingOccurrences(of: "\\\n", with: " ")
        for (from, to) in [("0.0.0.0:8443", "127.0.0.2:\(lanPort)"), ("127.0.0.1:8080", "127.0.0.1:0")] {
            command = command.replacingOccurrences(of: from, with: to)
        }
        let words = command.split(whereSeparator: \.isWhitespace).map(String.init)
        #expect(Array(words.prefix(2)) == ["homeport-server", "serve"])
        let database = "sqlite:" + data.file("h.sqlite")
        let server = try ServerProcess(
            serve: Array(words.dropFirst(2)) + ["--database", database, "--outbox", data.file("outbox")])
        defer { #expect(server.stop() == 0) }
        let shown = try ServerProcess.run(["identity", "show", "--json", "--database", database])
        let object = try JSONSerialization.jsonObject(with: Data(shown.output.utf8)) as? [String: Any]
        let publicKey = try #require(object?["publicKey"] as? String)
        let key = try #require(IdentityProof.readKey(publicKey))
        let certificate = try PeerCertificate.read(host: "127.0.0.2", port: lanPort)
        #expect(certificate.publicKey == key.map { String(format: "%02x", $0) }.joined())
    }

    @Test("the PostgreSQL set-up creates a database the server migrates")
    func postgresSetup() throws {
        guard case .postgres(let admin) = DatabaseURL.postgres(url: try TestPostgres.adminURL()),
            let parts = URLComponents(string: admin), let host = parts.host, let port = parts.port
        else { throw RawHTTPError("no test cluster") }
        let database = try DatabaseURL.postgres(url: admin).open()
        defer { database.close() }
        try database.execute("DROP DATABASE IF EXISTS homeport")
        try database.execute("DROP ROLE IF EXISTS homeport")
        defer {
            _ = try? database.execute("DROP DATABASE IF EXISTS homeport")
            _ = try? database.execute("DROP ROLE IF EXISTS homeport")
        }
        let script = try block("sh", "postgres").replacingOccurrences(of: "db.example.net", with: "\(host):\(port)")
        let run = try runShell(script, ["PGHOST": host, "PGPORT": String(port), "PGUSER": parts.user ?? "postgres"])
        #expect(run.status == 0, "\(run.error)")
        let applied = try DatabaseURL.postgres(url: "postgres://homeport@\(host):\(port)/homeport").open()
        defer { applied.close() }
        #expect(try applied.execute("SELECT count(*) AS n FROM schema_migrations").first?.int("n") ?? 0 >= 5)
    }
}
