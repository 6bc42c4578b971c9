import Foundation
import HomeportCommandLine
import HomeportCrypto

extension UsersCommand {
    static let importSpec = CommandSpec(
        name: "homeport-server users import",
        summary: "Bring accounts from another system, with their passwords: all of the file, or none of it.",
        arguments: [.init("FILE", help: "JSON lines, one account each; - reads standard input.")],
        options: [
            ServerCLI.databaseOption,
            .value(
                "max-import-cost", "pbkdf2=N,bcrypt=C",
                help:
                    "The costliest password hash taken (default \(HashCeiling.standard): twice Django 5.2's PBKDF2 count, bcrypt cost 14).",
                environment: "HOMEPORT_MAX_IMPORT_COST"),
        ],
        discussion: """
            Each line: {"email": "ada@example.com", "passwordHash": "pbkdf2_sha256$…", "verified": true,
            "stage": "approved", "createdAt": "2024-05-01T09:30:00Z"}. Only email is required; verified defaults
            to false, stage to approved (or waiting, rejected, held), createdAt (ISO 8601 or Unix seconds) to now.

            passwordHash is taken as it is: Django's pbkdf2_sha256$… (Homeport's own format), bcrypt ($2b$…, or
            Django's bcrypt$… and bcrypt_sha256$…, checked through the system's libcrypt), or null or ! for an
            account without a password (it signs in after a password reset). bcrypt, and PBKDF2 of fewer iterations
            than configured, are rehashed at the configured cost at the first successful sign-in; a costlier PBKDF2
            hash is kept (a sign-in never lowers a hash's cost). A hash costlier than --max-import-cost is a wrong
            line: one wrong
            password against it would hold a password thread (Django's 100,000,000-iteration hash: over a minute).
            Rehash such passwords at the source at a lower cost, or import those accounts with "passwordHash": null.
            Until then, every sign-in's password check takes as long as the costliest hash held (up to the default
            ceiling), so that a wrong password never tells an imported account from another or from none.

            A wrong line, an address listed twice or already in use: such lines are reported by number (the
            first 20; addresses already in use are looked for once every line reads well), exit status 1, and
            nothing of the file is imported. Django's users come out of its database with SQL,
            for django-allauth and for a plain Django site: see docs/server.md, "Bringing your users along".
            """)

    static func importAccounts(_ arguments: [String], environment: [String: String]) throws -> ExitCode {
        guard let parsed = try ServerCLI.parse(importSpec, arguments) else { return .success }
        let path = parsed.positionals[0]
        let data: Data
        do {
            data =
                path == "-"
                ? FileHandle.standardInput.readDataToEndOfFile() : try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            ServerCLI.error("homeport-server: cannot read \(path): \(error.localizedDescription)")
            return .failure
        }
        let now = Int64(Date().timeIntervalSince1970)
        let ceilingText = parsed.value("max-import-cost", spec: importSpec, environment: environment)
        guard let ceiling = ceilingText.map(HashCeiling.init(parsing:)) ?? .standard else {
            throw UsageError(
                "--max-import-cost: '\(ceilingText ?? "")' is not pbkdf2=N,bcrypt=C (N from 1000 to 100000000, C from 4 to 31)"
            )
        }
        do {
            let accounts = try AccountImport(jsonLines: data, now: now, ceiling: ceiling)
            let database = try ServerCLI.database(parsed, importSpec, environment).open()
            try ServerCLI.migrate(database)
            let count = try accounts.apply(to: database, now: now)
            let verified = accounts.entries.filter(\.verified).count
            ServerCLI.line("imported \(count) account\(count == 1 ? "" : "s") (\(verified) verified)")
            return .success
        } catch let failure as AccountImportFailure {
            ServerCLI.error("homeport-server: \(path) was not imported; nothing changed:\n\(failure)")
            return .failure
        }
    }
}
