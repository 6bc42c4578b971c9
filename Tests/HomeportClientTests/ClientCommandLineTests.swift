import Foundation
import HomeportTestSupport
import Testing

@Suite("The homeport command line", .tags(.process))
struct ClientCommandLineTests {
    @Test("help for every command; bad command lines exit 2")
    func help() throws {
        for arguments in [
            ["--help"], ["login", "--help"], ["whoami", "--help"], ["address", "add", "--help"], ["servers", "--help"],
        ] {
            let result = try ServerProcess.runClient(arguments)
            #expect(result.status == 0, "\(arguments)")
            #expect(result.output.contains("homeport"), "\(arguments)")
        }
        let home = try TemporaryDirectory()
        defer { home.remove() }
        for (arguments, message) in [
            (["frobnicate"], "unknown command"), (["login", "https://x"], "--email"),
            (["login", "https://x", "--email", "a@example.com"], "--password-stdin"),
            (["address", "fly"], "unknown address action"), (["whoami"], "takes SERVER"),
        ] {
            let result = try ServerProcess.runClient(arguments, environment: ["HOMEPORT_HOME": home.path])
            #expect(result.status == 2, "\(arguments)")
            #expect(result.error.contains(message), "\(arguments): \(result.error)")
        }
    }

    @Test("login, add addresses, whoami says which address answered, refusals say nothing was sent")
    func session() throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let mine = try Installation(hosts: ["127.0.0.1", "127.0.0.2"])
        let theirs = try Installation(hosts: ["127.0.0.1"])
        let environment = ["HOMEPORT_HOME": home.path, "HOMEPORT_NETWORK_PATH": "home"]
        let primary = try mine.address("127.0.0.1").url
        let login = try signUpWithCommandLine(primary, environment: environment)
        #expect(login.status == 0, "\(login.error)")
        let http = try ServerProcess.runClient(
            ["login", "http://127.0.0.1:1", "--email", "ada@example.com", "--password-stdin"], environment: environment,
            input: password + "\n")
        #expect(http.status == 3)
        #expect(http.error.contains("--allow-http"), "the command line adds its own advice: \(http.error)")
        let unknown = try ServerProcess.runClient(["logout", "nosuchserver"], environment: environment)
        #expect(unknown.status == 2)
        #expect(unknown.error.contains("no server matches 'nosuchserver'; see 'homeport servers'"), "\(unknown.error)")

        let listing = try ServerProcess.runClient(["servers", "--json"], environment: environment)
        let servers = try JSONSerialization.jsonObject(with: Data(listing.output.utf8)) as? [[String: Any]]
        let id = try #require(servers?.first?["server"] as? String)
        let prefix = String(id.prefix(8))

        let add = try ServerProcess.runClient(
            ["address", "add", prefix, try mine.address("127.0.0.2").url, "--allow-http"], environment: environment)
        #expect(add.status == 0, "\(add.error)")
        let other = try theirs.address("127.0.0.1").url
        let refused = try ServerProcess.runClient(
            ["address", "add", prefix, other, "--allow-http"], environment: environment)
        #expect(refused.status == 3)
        #expect(refused.error.contains("answered as a different installation"))
        #expect(refused.error.contains("nothing was sent"))

        let whoami = try ServerProcess.runClient(["whoami", prefix, "--json"], environment: environment)
        let answer = try JSONSerialization.jsonObject(with: Data(whoami.output.utf8)) as? [String: Any]
        #expect(answer?["via"] as? String == primary)
        #expect((answer?["appInfo"] as? [String: Any])?["instanceId"] as? String == id)

        mine.stop("127.0.0.1")
        let failover = try ServerProcess.runClient(["whoami", prefix], environment: environment)
        #expect(failover.status == 0)
        #expect(failover.output.contains("via \(try mine.address("127.0.0.2").url)"))

        let verify = try ServerProcess.runClient(["address", "verify", prefix], environment: environment)
        #expect(verify.output.contains("\(try mine.address("127.0.0.2").url)  verified"))

        let logout = try ServerProcess.runClient(["logout", prefix], environment: environment)
        #expect(logout.status == 0)
        let after = try ServerProcess.runClient(["whoami", prefix], environment: environment)
        #expect(after.status == 4)
        let remove = try ServerProcess.runClient(["remove", prefix], environment: environment)
        #expect(remove.status == 0)
        #expect(try ServerProcess.runClient(["servers"], environment: environment).output.contains("no servers yet"))
    }
}

@Suite("homeport login with verification by code", .tags(.process))
struct CommandLineVerificationTests {
    @Test("login asks for the mailed code on the next line; a wrong one is refused, the right one signs in")
    func promptsForCode() throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let server = try Installation(hosts: ["127.0.0.1"], extra: ["--email-verification", "code"])
        let outbox = server.directory.file("outbox")
        let process = Process()
        process.executableURL = URL(
            fileURLWithPath: (ServerProcess.binary as NSString).deletingLastPathComponent + "/homeport")
        process.arguments = [
            "login", try server.address("127.0.0.1").url, "--allow-http", "--signup", "--email", "ada@example.com",
            "--password-stdin",
        ]
        process.environment = ProcessInfo.processInfo.environment.merging([
            "HOMEPORT_HOME": home.path, "HOMEPORT_NETWORK_PATH": "home",
        ]) { $1 }
        let input = Pipe()
        let error = Pipe()
        process.standardInput = input
        process.standardOutput = FileHandle.nullDevice
        process.standardError = error
        try process.spawn()
        defer { if !process.hasEnded { process.terminate() } }
        input.fileHandleForWriting.write(Data((password + "\n").utf8))
        var code: String?
        eventually(every: .milliseconds(50)) {
            code = mailText(in: outbox).matches(of: /[A-Z]{4}-[A-Z]{4}/).last.map { String($0.output) }
            return code != nil
        }
        let mailed = try #require(code, "no code was mailed")
        input.fileHandleForWriting.write(Data("AAAA-AAAA\n".utf8))
        input.fileHandleForWriting.write(Data((mailed.lowercased() + "\n").utf8))
        try input.fileHandleForWriting.close()
        let status = process.waitForExit()
        let said = String(decoding: error.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(status == 0, "\(said)")
        #expect(said.contains("mailed a code to ada@example.com"))
        #expect(said.contains("Incorrect code."))
        #expect(!said.contains(mailed), "the code is not echoed")

        let whoami = try ServerProcess.runClient(
            ["servers", "--json"], environment: ["HOMEPORT_HOME": home.path, "HOMEPORT_NETWORK_PATH": "home"])
        #expect(whoami.output.contains("ada@example.com"))
    }

    @Test("no code on standard input: not signed in, exit 1, nothing enrolled")
    func noCode() throws {
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let server = try Installation(hosts: ["127.0.0.1"], extra: ["--email-verification", "code"])
        let environment = ["HOMEPORT_HOME": home.path, "HOMEPORT_NETWORK_PATH": "home"]
        let result = try ServerProcess.runClient(
            [
                "login", try server.address("127.0.0.1").url, "--allow-http", "--signup", "--email", "ada@example.com",
                "--password-stdin", "--json",
            ], environment: environment, input: password + "\n")
        #expect(result.status == 1)
        #expect(
            result.output.contains(#""verification":"pending""#)
                || result.output.contains(#""verification" : "pending""#))
        #expect(result.error.contains("no code given"))
        let servers = try ServerProcess.runClient(["servers", "--json"], environment: environment)
        #expect(!servers.output.contains("ada@example.com"))
    }
}
