import Foundation
import HomeportStorage
import HomeportTestSupport
import HomeportWire
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The sample product in another language (`Examples/sundown-python`), run as its README says:
/// two Homeport replicas on PostgreSQL, Sundown behind Debian's nginx (`auth_request`) and
/// Debian's Caddy (`forward_auth`) with the sample's own site files, notifying through the
/// product API on a Unix socket, pushes going to the APNs stand-in.
@Suite("The sample product in Python behind nginx and Caddy", .serialized, .tags(.process, .postgres, .interop))
struct SundownSampleTests {
    static let sample = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Examples/sundown-python").path
    static let password = "correct horse battery"
    static let device = String(repeating: "ab", count: 32)

    /// Sundown itself, once it printed where it listens.
    final class Sundown: @unchecked Sendable {
        let process = Process()
        let port: Int

        init(database: String, productAPI: String, key: String) throws {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            process.arguments = [
                SundownSampleTests.sample + "/sundown.py", "--listen", "127.0.0.1:0", "--database", database,
                "--product-api", productAPI,
            ]
            process.environment = ProcessInfo.processInfo.environment.merging(["SUNDOWN_PRODUCT_KEY": key]) { $1 }
            let output = Pipe()
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.spawn()
            let line = String(decoding: output.fileHandleForReading.availableLine(timeout: 20), as: UTF8.self)
            guard let range = line.range(of: #":(\d+) "#, options: .regularExpression),
                let port = Int(line[range].dropFirst().dropLast())
            else {
                process.stop()
                throw RawHTTPError("sundown did not start: \(line)")
            }
            self.port = port
        }

        deinit { process.stop() }
    }

    @Test(
        "a Python product behind nginx and Caddy: the CLI reaches its routes, forged account fields never reach it, a logout holds on every replica within a second, a share reaches APNs and the stream, a revoked key is refused"
    )
    func endToEnd() throws {
        let (database, cleanUp) = try Backend.postgres.makeDatabaseURL()
        defer { cleanUp() }
        let scratch = try TemporaryDirectory()
        defer { scratch.remove() }
        let certificates = try TestCertificates()
        defer { certificates.directory.remove() }
        let standIn = try APNsStandIn()
        let key = try ServerProcess.run(["product-keys", "create", "sundown", "--database", database.rawText])
            .output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(key.count == 43)

        // Two replicas on one database; the first serves the product API on a Unix socket.
        let socket = scratch.file("product.sock")
        let common =
            [
                "--database", database.rawText, "--signup", "open", "--password-iterations", "1000",
                "--trusted-proxies", "127.0.0.1", "--max-connections-per-address", "0",
            ] + standIn.serverArguments
        let first = try ServerProcess(serve: common + ["--product-listen", socket])
        defer { first.stop() }
        let second = try ServerProcess(serve: common)
        defer { second.stop() }
        let sundown = try Sundown(database: scratch.file("journal.sqlite3"), productAPI: "unix:" + socket, key: key)

        // The sample's own site files, with this machine's ports and certificate.
        let replicas = [first.port, second.port]
        let nginxPort = try RawHTTP.freePort()
        let site = try String(contentsOfFile: Self.sample + "/deploy/nginx-sundown.conf", encoding: .utf8)
            .replacingOccurrences(
                of: "server 127.0.0.1:8080;", with: replicas.map { "server 127.0.0.1:\($0);" }.joined(separator: " ")
            )
            .replacingOccurrences(of: "127.0.0.1:9000", with: "127.0.0.1:\(sundown.port)")
            .replacingOccurrences(of: "listen 443 ssl;", with: "listen 127.0.0.1:\(nginxPort) ssl;")
            .replacingOccurrences(of: "/etc/ssl/journal.example.net.crt", with: certificates.certificateFile)
            .replacingOccurrences(of: "/etc/ssl/journal.example.net.key", with: certificates.keyFile)
        let nginx = try ReverseProxy.nginx(site, port: nginxPort, in: scratch)
        defer { nginx.stop() }
        let caddyfile = try String(contentsOfFile: Self.sample + "/deploy/Caddyfile", encoding: .utf8)
        let caddyScratch = try TemporaryDirectory()
        defer { caddyScratch.remove() }
        let (caddy, caddyPort) = try ReverseProxy.caddy(in: caddyScratch) { port in
            caddyfile.replacingOccurrences(of: "journal.example.net {", with: "http://127.0.0.1:\(port) {")
                .replacingOccurrences(
                    of: "127.0.0.1:8080", with: replicas.map { "127.0.0.1:\($0)" }.joined(separator: " ")
                )
                .replacingOccurrences(of: "127.0.0.1:9000", with: "127.0.0.1:\(sundown.port)")
        }
        defer { caddy.stop() }

        let identity = try RawHTTP.request(port: first.port, path: HomeportPath.serverIdentity)
        let instance = try JSONDecoder().decode(ServerIdentity.self, from: identity.body).instanceId
        let fronts = [
            (
                url: "https://127.0.0.1:\(nginxPort)", reach: ["--ca-file", certificates.caFile],
                login: ["--ca-file", certificates.caFile]
            ),
            (url: "http://127.0.0.1:\(caddyPort)", reach: [String](), login: ["--allow-http"]),
        ]
        for (index, front) in fronts.enumerated() {
            let writer = "writer\(index)@example.com"
            let reader = "reader\(index)@example.com"
            var tokens: [String: String] = [:]
            for email in [writer, reader] {
                let signup = try Curl.call(
                    front.url + AllauthAppPath.base + "/" + AllauthAppPath.signup, method: "POST",
                    caFile: certificates.caFile, json: #"{"email":"\#(email)","password":"\#(Self.password)"}"#)
                #expect(signup.status == 200, "\(front.url): \(signup.body)")
                tokens[email] = try #require(
                    ((try? JSONSerialization.jsonObject(with: Data(signup.body.utf8))) as? [String: Any])
                        .flatMap { ($0["meta"] as? [String: Any])?["session_token"] as? String })
            }

            // The writer, as a person: the CLI signs in at the site and calls Sundown's routes.
            let home = try TemporaryDirectory()
            defer { home.remove() }
            let environment = ["HOMEPORT_HOME": home.path, "HOMEPORT_NETWORK_PATH": "home"]
            let login = try ServerProcess.runClient(
                ["login", front.url, "--email", writer, "--password-stdin"] + front.login, environment: environment,
                input: Self.password + "\n")
            #expect(login.status == 0, "\(front.url): \(login.error)")
            let list = try ServerProcess.runClient(
                ["api", front.url, "GET", "/api/v1/journal", "--json"] + front.reach, environment: environment)
            #expect(list.status == 0 && list.output.contains(writer), "\(front.url): \(list.output) \(list.error)")
            let written = try ServerProcess.runClient(
                ["api", front.url, "POST", "/api/v1/journal", "--data", #"{"text":"A quiet morning"}"#] + front.reach,
                environment: environment)
            #expect(written.status == 0, "\(front.url): \(written.output) \(written.error)")
            let entry = try #require(
                ((try? JSONSerialization.jsonObject(with: Data(written.output.utf8))) as? [String: Any])?["id"] as? Int)

            // A client's own account fields never reach Sundown: the proxy's replace them.
            let forged = try Curl.call(
                front.url + "/api/v1/journal", caFile: certificates.caFile,
                headers: [
                    "X-Homeport-Account-Id: 999", "X-Homeport-Account-Email: \(reader)", "X-Homeport-Groups: admin",
                    "\(HomeportHeader.sessionToken): \(tokens[writer]!)",
                ])
            let heard = (try? JSONSerialization.jsonObject(with: Data(forged.body.utf8))) as? [String: Any]
            let account = heard?["account"] as? [String: Any]
            #expect(forged.status == 200 && account?["email"] as? String == writer, "\(front.url): \(forged.body)")
            #expect(account?["id"] as? Int != nil && account?["id"] as? Int != 999, "\(front.url): \(forged.body)")
            #expect(account?["groups"] as? [String] == [], "the groups are Homeport's: \(forged.body)")
            let anonymous = try Curl.call(
                front.url + "/api/v1/journal", caFile: certificates.caFile,
                headers: ["X-Homeport-Account-Id: 1", "X-Homeport-Account-Email: \(writer)"])
            #expect(anonymous.status == 401 && !anonymous.body.contains("entries"), "\(front.url): \(anonymous.body)")

            // The reader's device and stream; the share reaches both, with the installation in `s`.
            let readerHome = try TemporaryDirectory()
            defer { readerHome.remove() }
            let readerEnvironment = ["HOMEPORT_HOME": readerHome.path, "HOMEPORT_NETWORK_PATH": "home"]
            #expect(
                try ServerProcess.runClient(
                    ["login", front.url, "--email", reader, "--password-stdin"] + front.login,
                    environment: readerEnvironment, input: Self.password + "\n"
                ).status == 0)
            let device = String(repeating: index == 0 ? "ab" : "cd", count: 32)
            let registered = try ServerProcess.runClient(
                ["push", "register", front.url, device] + front.reach, environment: readerEnvironment)
            #expect(registered.status == 0, "\(registered.error)")
            let fd = try RawHTTP.connect(port: second.port, timeout: 10)
            defer { close(fd) }
            RawHTTP.send(
                fd,
                "GET \(HomeportPath.notificationsStream) HTTP/1.1\r\nHost: x\r\n\(HomeportHeader.sessionToken): \(tokens[reader]!)\r\n\r\n"
            )
            let stream = StreamReader(fd: fd)
            #expect(stream.wait(for: ": connected"))
            // Not verified yet: refused, and nothing is shared.
            let unverified = try ServerProcess.runClient(
                ["api", front.url, "POST", "/api/v1/journal/\(entry)/share", "--data", #"{"email":"\#(reader)"}"#]
                    + front.reach, environment: environment)
            #expect(
                unverified.status == 5 && unverified.output.contains("address_not_verified"), "\(unverified.output)")
            #expect(
                try ServerProcess.run(["users", "verify", reader, "--database", database.rawText]).status == 0)
            let pushesBefore = standIn.requests().count
            let shared = try ServerProcess.runClient(
                ["api", front.url, "POST", "/api/v1/journal/\(entry)/share", "--data", #"{"email":"\#(reader)"}"#]
                    + front.reach, environment: environment)
            #expect(shared.status == 0, "\(front.url): \(shared.output) \(shared.error)")
            #expect(stream.wait(for: #""c":"sundown:entry.shared""#), "\(front.url): the stream")
            #expect(stream.text.contains(#""data":{"entry":"\#(entry)"}"#))
            #expect(standIn.waitForRequests(pushesBefore + 1), "\(front.url): the push")
            let push = try #require(standIn.requests().last { $0["device"] as? String == device })
            let appData = (push["payload"] as? [String: Any])?["homeport"] as? [String: Any]
            #expect(appData?["s"] as? String == instance.description, "\(String(describing: appData))")
            #expect(appData?["c"] as? String == "sundown:entry.shared")
            #expect((appData?["d"] as? [String: String])?["entry"] == String(entry))
            // The reader now reads the shared entry.
            let readerList = try ServerProcess.runClient(
                ["api", front.url, "GET", "/api/v1/journal"] + front.reach, environment: readerEnvironment)
            #expect(readerList.output.contains("A quiet morning"), "\(readerList.output)")

            // Signed out: refused on every replica within a second, through either proxy.
            let logout = try ServerProcess.runClient(["logout", front.url] + front.reach, environment: environment)
            #expect(logout.status == 0, "\(logout.error)")
            usleep(1_000_000)
            let after = try ServerProcess.runClient(
                ["api", front.url, "GET", "/api/v1/journal"] + front.reach, environment: environment)
            #expect(after.status == 4, "\(front.url): \(after.error)")
            let writerToken = try #require(tokens[writer])
            _ = try Curl.call(
                front.url + AllauthAppPath.base + "/" + AllauthAppPath.session, method: "DELETE",
                caFile: certificates.caFile, headers: ["\(HomeportHeader.sessionToken): \(writerToken)"])
            usleep(1_000_000)
            for replica in replicas {
                let answer = try RawHTTP.request(
                    port: replica, path: HomeportPath.authForward,
                    headers: [(HomeportHeader.sessionToken, writerToken)])
                #expect(answer.status == 401, "replica \(replica)")
            }
            for other in fronts {
                for _ in replicas {
                    let call = try Curl.call(
                        other.url + "/api/v1/journal", caFile: certificates.caFile,
                        headers: ["\(HomeportHeader.sessionToken): \(writerToken)"])
                    #expect(call.status == 401, "\(other.url)")
                }
            }
        }

        // Strangers: an address nobody has, and an address whose account was deleted, get nothing.
        try strangers(
            front: fronts[1].url, sundownPort: sundown.port, database: database,
            signUp: { email in try Self.signUp(email, at: fronts[1].url) })

        // A revoked key: Sundown's next notification is refused at once, and it says so.
        #expect(
            try ServerProcess.run(["product-keys", "revoke", "sundown", "--database", database.rawText]).status == 0)
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let environment = ["HOMEPORT_HOME": home.path, "HOMEPORT_NETWORK_PATH": "home"]
        let url = fronts[1].url
        #expect(
            try ServerProcess.runClient(
                ["login", url, "--email", "reader0@example.com", "--password-stdin", "--allow-http"],
                environment: environment, input: Self.password + "\n"
            ).status == 0)
        let written = try ServerProcess.runClient(
            ["api", url, "POST", "/api/v1/journal", "--data", #"{"text":"Later"}"#], environment: environment)
        let entry = try #require(
            ((try? JSONSerialization.jsonObject(with: Data(written.output.utf8))) as? [String: Any])?["id"] as? Int)
        let refused = try ServerProcess.runClient(
            ["api", url, "POST", "/api/v1/journal/\(entry)/share", "--data", #"{"email":"reader1@example.com"}"#],
            environment: environment)
        // The share looks the reader up first: that is where the revoked key is refused.
        #expect(
            refused.status == 6 && refused.output.contains("lookup_failed") && refused.output.contains("401"),
            "\(refused.output)")
    }
}

extension SundownSampleTests {
    /// A new account's session token, signed up at `front`.
    static func signUp(_ email: String, at front: String) throws -> String {
        let signup = try Curl.call(
            front + AllauthAppPath.base + "/" + AllauthAppPath.signup, method: "POST",
            json: #"{"email":"\#(email)","password":"\#(password)"}"#)
        return try #require(
            ((try? JSONSerialization.jsonObject(with: Data(signup.body.utf8))) as? [String: Any])
                .flatMap { ($0["meta"] as? [String: Any])?["session_token"] as? String }, "\(signup.body)")
    }

    /// Calls Sundown through `front` with `token`.
    static func journal(
        _ front: String, _ token: String, _ method: String = "GET", _ path: String = "", json: String? = nil
    )
        throws -> (status: Int, body: String)
    {
        try Curl.call(
            front + "/api/v1/journal" + path, method: method, headers: ["\(HomeportHeader.sessionToken): \(token)"],
            json: json)
    }

    /// A share to an address nobody has is refused and kept nowhere, so whoever signs up with it
    /// later reads nothing; after the reader's account is deleted, whoever signs up with its
    /// address (and verifies it) reads nothing of what was shared with the deleted account, and a
    /// share again notifies the new account, not with the old notification. A field that reads as
    /// Homeport's with `_` for `-` gets a 401 from Sundown itself.
    func strangers(
        front: String, sundownPort: Int, database: DatabaseURL, signUp: (String) throws -> String
    ) throws {
        let writer = try signUp("diarist@example.com")
        let written = try Self.journal(front, writer, "POST", json: #"{"text":"For Cy only"}"#)
        #expect(written.status == 201, "\(written.body)")
        let entry = try #require(
            ((try? JSONSerialization.jsonObject(with: Data(written.body.utf8))) as? [String: Any])?["id"] as? Int)

        let nobody = try Self.journal(front, writer, "POST", "/\(entry)/share", json: #"{"email":"later@example.com"}"#)
        #expect(nobody.status == 404 && nobody.body.contains("no_account"), "\(nobody.body)")
        let later = try signUp("later@example.com")
        #expect(
            try ServerProcess.run(["users", "verify", "later@example.com", "--database", database.rawText]).status == 0)
        #expect(!(try Self.journal(front, later).body.contains("For Cy only")), "a share to nobody went to a stranger")

        let cy = try signUp("cy@example.com")
        #expect(
            try ServerProcess.run(["users", "verify", "cy@example.com", "--database", database.rawText]).status == 0)
        let first = try Self.journal(front, writer, "POST", "/\(entry)/share", json: #"{"email":"CY@example.com "}"#)
        #expect(first.status == 200, "\(first.body)")
        #expect(try Self.journal(front, cy).body.contains("For Cy only"))
        let firstAnswer = (try? JSONSerialization.jsonObject(with: Data(first.body.utf8))) as? [String: Any]

        #expect(
            try ServerProcess.run(["users", "delete", "cy@example.com", "--yes", "--database", database.rawText])
                .status == 0)
        let impostor = try signUp("cy@example.com")
        #expect(
            try ServerProcess.run(["users", "verify", "cy@example.com", "--database", database.rawText]).status == 0)
        #expect(
            !(try Self.journal(front, impostor).body.contains("For Cy only")),
            "whoever signs up with a deleted account's address reads its shares")
        let again = try Self.journal(front, writer, "POST", "/\(entry)/share", json: #"{"email":"cy@example.com"}"#)
        #expect(again.status == 200, "\(again.body)")
        let againAnswer = (try? JSONSerialization.jsonObject(with: Data(again.body.utf8))) as? [String: Any]
        #expect(againAnswer?["reader"] as? Int != firstAnswer?["reader"] as? Int, "the new account, by its own id")
        #expect(
            againAnswer?["notification"] as? Int == 1, "a new notification, not the deleted account's: \(again.body)")

        // Straight to Sundown, as a process on its host could: a variant spelling is refused.
        for variant in ["X_Homeport_Account_Id: 1", "x-homeport_account-email: cy@example.com"] {
            let direct = try Curl.call(
                "http://127.0.0.1:\(sundownPort)/api/v1/journal",
                headers: ["X-Homeport-Account-Id: 2", "X-Homeport-Account-Email: diarist@example.com", variant])
            #expect(direct.status == 401, "\(variant): \(direct.body)")
        }
        let duplicate = try Self.journal(
            front, writer, "POST", json: #"{"text":"one","text":"two"}"#)
        #expect(duplicate.status == 400, "a key named twice: \(duplicate.body)")

        // A body Sundown does not read (a 404, a GET's, one too large, one beside a refused field)
        // is never read as the next request on the proxy's kept-alive connection: the connection
        // ends with the answer, so the request hidden in it, with account fields nobody checked,
        // is never run.
        let smuggled =
            "POST /api/v1/journal HTTP/1.1\r\nHost: x\r\nX-Homeport-Account-Id: 1\r\n"
            + "X-Homeport-Account-Email: victim@example.com\r\nContent-Type: application/json\r\n"
            + "Content-Length: 20\r\n\r\n{\"text\":\"smuggled\"}"
        let signedIn = "X-Homeport-Account-Id: 2\r\nX-Homeport-Account-Email: diarist@example.com\r\n"
        for head in [
            "GET /api/v1/journalX HTTP/1.1\r\nHost: x\r\n", "GET /api/v1/journal HTTP/1.1\r\nHost: x\r\n\(signedIn)",
            "POST /api/v1/journal HTTP/1.1\r\nHost: x\r\n\(signedIn)X_Homeport_Session: s\r\n",
        ] {
            let fd = try RawHTTP.connect(port: sundownPort, timeout: 10)
            defer { close(fd) }
            RawHTTP.send(fd, head + "Content-Length: \(smuggled.utf8.count)\r\n\r\n" + smuggled)
            let answers = String(decoding: try RawHTTP.readToEnd(fd), as: UTF8.self)
            #expect(answers.components(separatedBy: "HTTP/1.").count == 2, "\(head): \(answers)")
        }
        let chunked = try RawHTTP.connect(port: sundownPort, timeout: 10)
        defer { close(chunked) }
        RawHTTP.send(
            chunked,
            "POST /api/v1/journal HTTP/1.1\r\nHost: x\r\n\(signedIn)Transfer-Encoding: chunked\r\n\r\n"
                + "\(String(smuggled.utf8.count, radix: 16))\r\n\(smuggled)\r\n0\r\n\r\n")
        let chunkedAnswers = String(decoding: try RawHTTP.readToEnd(chunked), as: UTF8.self)
        #expect(
            chunkedAnswers.hasPrefix("HTTP/1.1 400") && chunkedAnswers.components(separatedBy: "HTTP/1.").count == 2)
        let victim = try Curl.call(
            "http://127.0.0.1:\(sundownPort)/api/v1/journal",
            headers: ["X-Homeport-Account-Id: 1", "X-Homeport-Account-Email: victim@example.com"])
        #expect(!victim.body.contains("smuggled"), "a smuggled request was run: \(victim.body)")
    }
}

extension FileHandle {
    /// The first line written to this pipe, or what came before `timeout` seconds passed.
    fileprivate func availableLine(timeout: Double) -> Data {
        var line = Data()
        let deadline = Date().addingTimeInterval(timeout)
        var pollfd = pollfd(fd: fileDescriptor, events: Int16(POLLIN), revents: 0)
        while Date() < deadline {
            guard poll(&pollfd, 1, 100) > 0 else { continue }
            var byte: UInt8 = 0
            guard Glibc.read(fileDescriptor, &byte, 1) == 1 else { break }
            if byte == UInt8(ascii: "\n") { break }
            line.append(byte)
        }
        return line
    }
}
