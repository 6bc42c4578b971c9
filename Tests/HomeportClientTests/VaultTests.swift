import Foundation
import HomeportClient
import HomeportCrypto
import HomeportTestSupport
import Testing

@Suite("Vault and directory")
struct VaultTests {
    @Test("AES-256-GCM opens only with the same key and associated data")
    func aesGCM() throws {
        let key = try SystemRandom().bytes(32)
        let box = try AESGCM.seal(Array("token".utf8), key: key, associatedData: Array("server-a".utf8))
        #expect(try AESGCM.open(box, key: key, associatedData: Array("server-a".utf8)) == Array("token".utf8))
        #expect(throws: AESGCM.Failure.authenticationFailed) {
            try AESGCM.open(box, key: key, associatedData: Array("server-b".utf8))
        }
        var tampered = box
        tampered[14] ^= 1
        #expect(throws: AESGCM.Failure.authenticationFailed) {
            try AESGCM.open(tampered, key: key, associatedData: Array("server-a".utf8))
        }
        #expect(throws: AESGCM.Failure.authenticationFailed) {
            try AESGCM.open(box, key: try SystemRandom().bytes(32), associatedData: Array("server-a".utf8))
        }
    }

    @Test(
        "the file vault holds no plaintext token, keeps its key 0600, and a file moved to another server does not open")
    func fileVault() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let vault = try FileVault(directory: directory.file("vault"))
        let token = "tok_" + String(repeating: "Q", count: 39)
        try vault.store(token: token, for: "server-a")
        #expect(try vault.token(for: "server-a") == token)
        let file = try #require(FileManager.default.contents(atPath: vault.path("server-a")))
        #expect(!String(decoding: file, as: UTF8.self).contains("QQQQ"))
        let keyMode = try FileManager.default.attributesOfItem(atPath: directory.file("vault/vault.key"))[
            .posixPermissions]
        #expect((keyMode as? NSNumber)?.intValue == 0o600)

        // Put server A's sealed file where server B's belongs: it must not open as B's.
        try FileManager.default.copyItem(atPath: vault.path("server-a"), toPath: vault.path("server-b"))
        #expect(throws: ClientError.self) { try vault.token(for: "server-b") }

        try vault.remove(server: "server-a")
        #expect(try vault.token(for: "server-a") == nil)
        // A new vault over the same directory reads what the old one wrote.
        try vault.store(token: token, for: "server-c")
        #expect(try FileVault(directory: directory.file("vault")).token(for: "server-c") == token)
    }

    @Test("addresses: HTTPS by default, plain HTTP only when chosen, no credentials in URLs")
    func addresses() throws {
        #expect(try ServerAddress(parsing: "HTTPS://Books.Example.NET/").url == "https://books.example.net")
        #expect(throws: ClientError.plainHTTPNotAllowed("http://192.168.1.20:8080")) {
            try ServerAddress(parsing: "http://192.168.1.20:8080")
        }
        #expect(try ServerAddress(parsing: "http://192.168.1.20:8080", allowHTTP: true).allowsHTTP)
        for bad in ["ftp://x", "https://user:pw@host", "https://host/?q=1", "not a url", "https://"] {
            #expect(throws: ClientError.self, "\(bad)") { try ServerAddress(parsing: bad, allowHTTP: true) }
        }
        #expect(try ServerAddress(parsing: "https://h").origin == "https://h:443")
        #expect(try ServerAddress(parsing: "http://[::1]:81", allowHTTP: true).origin == "http://[::1]:81")
    }

    @Test("the directory survives a reload and is written owner-only")
    func directoryPersistence() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let servers = try ServerDirectory(directory: directory.path)
        let record = ServerRecord(
            instanceID: nil, product: "homeport", email: "ada@example.com",
            primary: try ServerAddress(parsing: "https://books.example.net"),
            alternatives: [
                .init(address: try ServerAddress(parsing: "https://10.0.0.2"), verifiedPaths: ["home": Date()])
            ],
            lastWinner: nil, signedOut: false, signedInPath: "home")
        try servers.save(record)
        let reloaded = try ServerDirectory(directory: directory.path)
        #expect(reloaded.all.count == 1)
        #expect(reloaded.all.first?.alternatives.first?.verifiedPaths["home"] != nil)
        #expect(try reloaded.find("https://books.example.net/").email == "ada@example.com")
        #expect(throws: ClientError.self) { try reloaded.find("nothing") }
        let mode = try FileManager.default.attributesOfItem(atPath: reloaded.path)[.posixPermissions]
        #expect((mode as? NSNumber)?.intValue == 0o600)
        try Data("{broken".utf8).write(to: URL(fileURLWithPath: reloaded.path))
        #expect(throws: ClientError.self) { try ServerDirectory(directory: directory.path) }
    }
}
