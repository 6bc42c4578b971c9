import Foundation
import HomeportTestSupport
import HomeportWire
import Testing

/// `homeport login URL --browser`: the command listens on 127.0.0.1, a browser signs in at the
/// server's web door and confirms the device, and the browser's way back brings the code to the
/// command, which exchanges it with the verifier only it holds.
@Suite("Signing in through a browser from the command line", .tags(.process, .browser))
struct BrowserLoginCommandTests {
    /// A running `homeport login --browser`, and what it says on standard error.
    final class Running {
        let process = Process()
        let error = Pipe()
        let output = Pipe()
        let said = LockedBox("")

        init(_ url: String, home: String, extra: [String] = []) throws {
            process.executableURL = URL(
                fileURLWithPath: (ServerProcess.binary as NSString).deletingLastPathComponent + "/homeport")
            process.arguments = ["login", url, "--allow-http", "--browser", "--json"] + extra
            process.environment = ProcessInfo.processInfo.environment.merging(["HOMEPORT_HOME": home]) { $1 }
                .filter { $0.key != "DISPLAY" && $0.key != "WAYLAND_DISPLAY" }
            process.standardOutput = output
            process.standardError = error
            let said = self.said
            error.fileHandleForReading.readabilityHandler = { handle in
                let data = handle.availableData
                said.mutate { $0 += String(decoding: data, as: UTF8.self) }
            }
            try process.spawn()
        }

        /// The page it asks to open.
        func page() throws -> String {
            var url: String?
            eventually(every: .milliseconds(50)) {
                url = said.value.split(separator: "\n").first { $0.hasPrefix("http://") }.map(String.init)
                return url != nil || process.hasEnded
            }
            return try #require(url, "\(said.value)")
        }

        func finish() -> (status: Int32, output: String, error: String) {
            let status = process.waitForExit()
            error.fileHandleForReading.readabilityHandler = nil
            let output = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            return (status, output, said.value)
        }
    }

    /// Signs ada in at `browser` and confirms the handoff of `page`; the way back it is given.
    func confirm(_ browser: Browser, page: String, device: String) throws -> String {
        let path = String(page.drop { $0 != "/" }.dropFirst(2).drop { $0 != "/" })
        #expect(try browser.get(path).header("Location") == "/account/login")
        _ = try browser.get("/account/login")
        #expect(
            try browser.post("/account/login", ["email": "ada@example.com", "password": "correct horse battery"])
                .status == 303)
        #expect(try browser.get("/account").header("Location") == path)
        let confirmation = try browser.get(path)
        #expect(confirmation.text.contains(device), "\(confirmation.text)")
        let done = try browser.post(path, ["decision": "allow"])
        let link = try #require(done.text.firstMatch(of: /href="([^"]+)">Open the app/).map { String($0.output.1) })
        return link.replacingOccurrences(of: "&amp;", with: "&")
    }

    @Test("login --browser refuses what the browser does itself: a provider, an email, a password or an ID token")
    func browserRefusesTheOthers() throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        for extra in [
            ["--id-token-stdin"], ["--provider", "household"], ["--email", "ada@example.com"], ["--password-stdin"],
            ["--signup"],
        ] {
            let run = try ServerProcess.runClient(
                ["login", "http://127.0.0.1:9", "--allow-http", "--browser"] + extra,
                environment: ["HOMEPORT_HOME": home.path], input: "a secret that must not be read\n")
            #expect(run.status == 2 && run.error.contains("login --browser takes no"), "\(extra): \(run.error)")
        }
    }

    @Test("the browser's way back signs the command in; a way back with another state does not")
    func browserLogin() throws {
        let server = try Installation(hosts: ["127.0.0.1"])
        let url = try server.address("127.0.0.1").url
        let port = try #require(server.ports["127.0.0.1"])
        let signup = try RawHTTP.request(
            port: port, method: "POST", path: AllauthAppPath.path(AllauthAppPath.signup),
            headers: [("Content-Type", "application/json")],
            body: Data(#"{"email":"ada@example.com","password":"correct horse battery"}"#.utf8))
        #expect(signup.status == 200)
        let home = try TemporaryDirectory()
        defer { home.remove() }

        let running = try Running(url, home: home.path, extra: ["--device-name", "The test runner"])
        defer { if !running.process.hasEnded { running.process.terminate() } }
        let page = try running.page()
        let back = try confirm(Browser(port: port), page: page, device: "The test runner")
        let callback = try #require(URLComponents(string: back))
        #expect(callback.host == "127.0.0.1" && callback.path == "/callback", "\(back)")
        // The browser follows the way back to the command's listener.
        let arrived = try RawHTTP.request(
            port: try #require(callback.port), path: "/callback?" + (callback.percentEncodedQuery ?? ""))
        #expect(arrived.status == 200 && arrived.text.contains("close this window"))
        let result = running.finish()
        #expect(result.status == 0, "\(result.error)")
        let answer = try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any]
        #expect(answer?["signedIn"] as? Bool == true && answer?["email"] as? String == "ada@example.com")
        let servers = try ServerProcess.runClient(["servers", "--json"], environment: ["HOMEPORT_HOME": home.path])
        #expect(servers.output.contains("ada@example.com"))

        // Someone who learns the port sends a made-up way back: refused, nothing enrolled.
        let other = try TemporaryDirectory()
        defer { other.remove() }
        let second = try Running(url, home: other.path)
        defer { if !second.process.hasEnded { second.process.terminate() } }
        _ = try second.page()
        var found: Int?
        eventually {
            found = try? portOfListener(second)
            return found != nil || second.process.hasEnded
        }
        let listening = try #require(found, "no listener; the command said: \(second.said.value)")
        let forged = try RawHTTP.request(port: listening, path: "/callback?code=stolen&state=not-yours")
        #expect(forged.status == 200)
        let refused = second.finish()
        #expect(refused.status != 0 && refused.error.contains("another sign-in"), "\(refused.error)")
        let none = try ServerProcess.runClient(["servers", "--json"], environment: ["HOMEPORT_HOME": other.path])
        #expect(!none.output.contains("ada@example.com"))
    }

    /// The port the command listens on, read from the system's socket table as another local
    /// process could.
    func portOfListener(_ running: Running) throws -> Int {
        let pid = running.process.processIdentifier
        // Read to the end (a procfs file reports no size: a one-shot read gets its first page only).
        let table = String(
            decoding: FileHandle(forReadingAtPath: "/proc/net/tcp")?.readDataToEndOfFile() ?? Data(), as: UTF8.self)
        let inodes = Set(
            ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []).compactMap { fd in
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)"))
                    .flatMap { $0.hasPrefix("socket:[") ? String($0.dropFirst(8).dropLast()) : nil }
            })
        for line in table.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            guard fields.count > 9, fields[3] == "0A", inodes.contains(String(fields[9])),
                let port = Int(fields[1].split(separator: ":").last ?? "", radix: 16)
            else { continue }
            return port
        }
        throw RawHTTPError("no listening socket of the command")
    }
}
