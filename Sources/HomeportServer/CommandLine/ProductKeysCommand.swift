import Foundation
import HomeportCommandLine
import HomeportCrypto

/// `homeport-server product-keys create|list|rotate|revoke`: keys of the product API.
enum ProductKeysCommand {
    static func spec(_ action: String) -> CommandSpec {
        switch action {
        case "create":
            CommandSpec(
                name: "homeport-server product-keys create",
                summary: "Make a product API key; it is printed once and stored only as its SHA-256.",
                arguments: [.init("NAME", help: "A name for the key (the product's): 1–64 of a-z 0-9 . _ -.")],
                options: [ServerCLI.databaseOption])
        case "revoke":
            CommandSpec(
                name: "homeport-server product-keys revoke",
                summary:
                    "Revoke a product API key: refused at once, on every replica; the codes it declared leave the catalogue, free for another key.",
                arguments: [.init("NAME", help: "The key's name.")], options: [ServerCLI.databaseOption])
        case "rotate":
            CommandSpec(
                name: "homeport-server product-keys rotate",
                summary:
                    "Give a product API key a new secret, printed once: the old one is refused at once, on every replica; the key keeps its codes.",
                arguments: [.init("NAME", help: "The key's name.")], options: [ServerCLI.databaseOption])
        default:
            CommandSpec(
                name: "homeport-server product-keys list", summary: "List product API keys (never the keys).",
                options: [
                    ServerCLI.databaseOption,
                    .flag("json", help: "Print a JSON array of {name, createdAt, revokedAt}."),
                ])
        }
    }

    static let overview = """
        Usage: homeport-server product-keys create|list|rotate|revoke [NAME] [options]

        Keys a product in another language sends to the product API (serve --product-listen) as
        'Authorization: Bearer KEY', to notify its users. A key is shown once, when it is made.
        """

    static func run(_ arguments: [String], environment: [String: String]) throws -> ExitCode {
        guard
            let (action, rest) = try ServerCLI.action(
                of: "product-keys", among: ["create", "list", "rotate", "revoke"], overview: overview, arguments)
        else { return .success }
        let spec = spec(action)
        guard let parsed = try ServerCLI.parse(spec, rest) else { return .success }
        let database = try ServerCLI.database(parsed, spec, environment).open()
        defer { database.close() }
        try ServerCLI.migrate(database)
        let store = ProductKeyStore(database)
        let now = Int64(Date().timeIntervalSince1970)
        switch action {
        case "create":
            let name = parsed.positionals[0]
            guard (1...64).contains(name.utf8.count),
                name.utf8.allSatisfy({
                    (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || [0x2E, 0x5F, 0x2D].contains($0)
                })
            else { throw UsageError("a key's name is 1–64 of a-z 0-9 . _ -, not '\(name)'") }
            let key = try SecretToken.generate()
            guard try store.create(name: name, keyHash: SecretToken.storedForm(of: key), now: now) != nil else {
                ServerCLI.error("homeport-server: a key named '\(name)' exists (revoked keys keep their name)")
                return .failure
            }
            ServerCLI.line(key)
            ServerCLI.error("homeport-server: product key '\(name)' made; it is not shown again")
        case "rotate":
            let name = parsed.positionals[0]
            let key = try SecretToken.generate()
            guard try store.rotate(name: name, keyHash: SecretToken.storedForm(of: key)) else {
                ServerCLI.error("homeport-server: no working key is named '\(name)'")
                return .failure
            }
            ServerCLI.line(key)
            ServerCLI.error(
                "homeport-server: product key '\(name)' rotated; the old secret is refused from now on, and this one is not shown again"
            )
        case "revoke":
            let name = parsed.positionals[0]
            guard try database.transaction({ try ProductKeyStore($0).revoke(name: name, now: now) }) else {
                ServerCLI.error("homeport-server: no working key is named '\(name)'")
                return .failure
            }
            ServerCLI.line("\(name): revoked")
        default:
            let keys = try store.all()
            let formatter = ISO8601DateFormatter()
            let date = { (seconds: Int64) in formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
            }
            if parsed.flag("json") {
                let objects: [[String: Any]] = keys.map {
                    ["name": $0.name, "createdAt": date($0.createdAt), "revokedAt": $0.revokedAt.map(date) ?? NSNull()]
                }
                try ServerCLI.printJSON(objects)
            } else if keys.isEmpty {
                ServerCLI.line("no product keys yet")
            } else {
                for key in keys {
                    ServerCLI.line(
                        "\(key.name)  made \(date(key.createdAt))"
                            + (key.revokedAt.map { "  revoked \(date($0))" } ?? ""))
                }
            }
        }
        return .success
    }
}
