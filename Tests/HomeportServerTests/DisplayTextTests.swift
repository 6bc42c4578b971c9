import Foundation
import HomeportServer
import HomeportTestSupport
import HomeportWire
import Testing

/// Text a person reads in a notification or a catalogue holds nothing hidden or reordering,
/// whoever sends it: the operator's catalogue, the operator's `push send`, a Swift product.
@Suite("Titles and bodies hold nothing hidden", .tags(.process))
struct DisplayTextTests {
    static let hidden = [
        "\u{202E}", "\u{2028}", "\u{7F}", "\u{85}", "\u{200B}", "\u{2067}", "\u{FEFF}", "\u{1B}", "\n", "\u{AD}",
        "\u{E0041}", "\u{2061}", "\u{3164}", "\u{34F}", "\u{180E}",
    ]

    @Test("an operator's catalogue with a hidden character in a title does not load, naming the code")
    func operatorCatalogue() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        for character in Self.hidden {
            let file = directory.file("catalogue.json")
            let json = try JSONEncoder().encode([
                "codes": [["code": "shelf:item.ready", "title": "Ready\(character)now"]]
            ])
            try json.write(to: URL(fileURLWithPath: file))
            #expect(throws: (any Error).self, "\(character.unicodeScalars.first!.value)") {
                try ServerCatalogue.codes(fromFile: file)
            }
        }
        #expect(ServerCatalogue.problem(.init(code: "shelf:item.ready", title: "Ready: 📚 Café, 本, 👨‍👩‍👧")) == nil)
        for reserved in ["homeport:x", "home-port.core:x", "h0meport:x", "hornep0rt/core:x"] {
            #expect(ServerCatalogue.isReserved(reserved), "\(reserved)")
        }
        #expect(!ServerCatalogue.isReserved("sundown:entry.shared") && !ServerCatalogue.isReserved("home:x"))
    }

    @Test("push send refuses a title or a body with a hidden character, and queues nothing")
    func operatorPush() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = "sqlite:" + directory.file("h.sqlite")
        let server = try ServerProcess(serve: [
            "--database", database, "--signup", "open", "--password-iterations", "1000",
        ])
        let signup = try RawHTTP.request(
            port: server.port, method: "POST", path: AllauthAppPath.base + "/" + AllauthAppPath.signup,
            headers: [("Content-Type", "application/json")],
            body: Data(#"{"email":"ada@example.com","password":"correct horse battery"}"#.utf8))
        #expect(signup.status == 200)
        server.stop()
        for character in Self.hidden where character != "\n" {
            for (title, body) in [("Hi\(character)", "fine"), ("Hi", "body\(character)")] {
                let sent = try ServerProcess.run([
                    "push", "send", "--database", database, "--email", "ada@example.com", "--code",
                    ServerCatalogue.testCode,
                    "--apns-topic", "org.example.app", "--title", title, "--body",
                    body,
                ])
                #expect(sent.status == 1, "\(title) / \(body): \(sent.error)")
            }
        }
        let plain = try ServerProcess.run([
            "push", "send", "--database", database, "--email", "ada@example.com", "--code", ServerCatalogue.testCode,
            "--apns-topic", "org.example.app", "--title", "Hi", "--body",
            "two\nlines",
        ])
        #expect(plain.status == 0, "\(plain.error)")
        let count = try ServerProcess.runProgram(
            "/usr/bin/sqlite3", [directory.file("h.sqlite"), "SELECT COUNT(*) FROM notifications"])
        #expect(count.output.trimmingCharacters(in: .whitespacesAndNewlines) == "1", "only the plain one was made")
    }
}
