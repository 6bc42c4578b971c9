import Foundation
import HomeportTestSupport
import HomeportWire
import Testing

@testable import HomeportClient

/// The phone of the person who runs the server: its account's groups, the queue, a decision.
@Suite("An admin approves a newcomer from the client library", .tags(.process))
struct HouseholdClientTests {
    static let password = "correct horse battery"

    @Test("the account says its groups; an admin lists the queue and approves; a non-admin is refused with 403")
    func approveFromThePhone() async throws {
        let files = try TemporaryDirectory()
        defer { files.remove() }
        let database = "sqlite:" + files.file("h.sqlite")
        let server = try ServerProcess(
            serve: [
                "--database", database, "--signup", "approval", "--password-iterations", "1000",
                "--outbox", files.file("outbox"),
            ])
        defer { server.stop() }
        let address = try ServerAddress(parsing: "http://127.0.0.1:\(server.port)", allowHTTP: true)

        // The person who runs it: signs up (and waits), then the operator's shell lets them in as admin.
        let adminHome = try TemporaryDirectory()
        defer { adminHome.remove() }
        let admin = try makeClient(adminHome, SpyTransport())
        #expect(
            try await admin.signup(at: address, email: "root@example.com", password: Self.password)
                == .pending(.waiting))
        for command in [
            ["users", "approve", "root@example.com"], ["users", "groups", "root@example.com", "add", "admin"],
        ] {
            let run = try ServerProcess.run(command + ["--database", database])
            #expect(run.status == 0, "\(command): \(run.error)")
        }
        guard
            case .signedIn(let record) = try await admin.login(
                at: address, email: "root@example.com", password: Self.password)
        else { throw RawHTTPError("the admin did not sign in") }
        let account = try await admin.account(on: record)
        #expect(account.email == "root@example.com" && account.groups == ["admin"] && account.stage == "approved")

        // A newcomer waits; the admin sees them and approves.
        let newcomerHome = try TemporaryDirectory()
        defer { newcomerHome.remove() }
        let newcomer = try makeClient(newcomerHome, SpyTransport())
        #expect(
            try await newcomer.signup(at: address, email: "ann@example.com", password: Self.password)
                == .pending(.waiting))
        let queue = try await admin.pendingSignups(on: record)
        #expect(queue.map(\.email) == ["ann@example.com"] && queue.first?.stage == "waiting")
        let ann = try #require(queue.first)
        let decided = try await admin.decide(.approve, signup: ann.id, on: record)
        #expect(decided.stage == "approved" && decided.email == "ann@example.com")
        #expect(try await admin.pendingSignups(on: record).isEmpty)
        guard
            case .signedIn(let annRecord) = try await newcomer.login(
                at: address, email: "ann@example.com", password: Self.password)
        else { throw RawHTTPError("approved, ann did not sign in") }

        // Ann is no admin: her phone is refused, with the server's own words.
        await #expect {
            try await newcomer.pendingSignups(on: annRecord)
        } throws: { error in
            guard case .refused(_, let status, let code, _, _) = error as? ClientError else { return false }
            return status == 403 && code == "forbidden"
        }
        await #expect {
            try await admin.decide(.hold, signup: ann.id, on: record)
        } throws: { error in
            guard case .refused(_, let status, _, _, _) = error as? ClientError else { return false }
            return status == 404
        }
    }

    @Test(
        "an invitation signs up through the library and the command line, under closed sign-up; a bad code is refused")
    func invitation() async throws {
        let files = try TemporaryDirectory()
        defer { files.remove() }
        let database = "sqlite:" + files.file("h.sqlite")
        let server = try ServerProcess(
            serve: [
                "--database", database, "--signup", "closed", "--password-iterations", "1000",
                "--outbox", files.file("outbox"),
            ])
        defer { server.stop() }
        let url = "http://127.0.0.1:\(server.port)"
        let address = try ServerAddress(parsing: url, allowHTTP: true)
        func invite(_ extra: [String] = []) throws -> String {
            let made = try ServerProcess.run(["invites", "create", "--database", database] + extra)
            #expect(made.status == 0, "\(made.error)")
            return String(made.output.split(separator: "\n").first ?? "")
        }
        let home = try TemporaryDirectory()
        defer { home.remove() }
        let client = try makeClient(home, SpyTransport())
        await #expect {
            try await client.signup(at: address, email: "ann@example.com", password: Self.password, invitation: "nope")
        } throws: { error in
            guard case .rejected(400, let errors) = error as? ClientError else { return false }
            return errors.map(\.code) == ["invalid_invitation"]
        }
        guard
            case .signedIn(let record) = try await client.signup(
                at: address, email: "ann@example.com", password: Self.password,
                invitation: try invite(["--groups", "family"]))
        else { throw RawHTTPError("the invitation did not sign ann up") }
        #expect(try await client.account(on: record).groups == ["family"])

        // The command line, as a person follows an invitation.
        let cliHome = try TemporaryDirectory()
        defer { cliHome.remove() }
        let environment = ["HOMEPORT_HOME": cliHome.path, "HOMEPORT_NETWORK_PATH": "home"]
        let code = try invite(["--email", "bob@example.com"])
        let alone = try ServerProcess.runClient(
            ["login", url, "--allow-http", "--email", "bob@example.com", "--password-stdin", "--invitation-stdin"],
            environment: environment, input: Self.password + "\n" + code + "\n")
        #expect(alone.status == 2 && alone.error.contains("--invitation-stdin goes with --signup"), "\(alone.error)")
        // The whole link, pasted, as a person has it.
        let signed = try ServerProcess.runClient(
            [
                "login", url, "--allow-http", "--signup", "--email", "bob@example.com", "--password-stdin",
                "--invitation-stdin",
            ], environment: environment,
            input: Self.password + "\n  https://home.example.net/account/signup?invitation=\(code)  \n")
        #expect(signed.status == 0, "\(signed.output) \(signed.error)")
    }
}

extension HouseholdClientTests {
    @Test(
        "an admin invites from the library and the command line (mailed, listed, revoked); a member's phone is refused")
    func inviteFromThePhone() async throws {
        let files = try TemporaryDirectory()
        defer { files.remove() }
        let database = "sqlite:" + files.file("h.sqlite")
        let outbox = files.file("outbox")
        let server = try ServerProcess(
            serve: [
                "--database", database, "--signup", "approval", "--password-iterations", "1000", "--outbox", outbox,
            ])
        defer { server.stop() }
        let url = "http://127.0.0.1:\(server.port)"
        let address = try ServerAddress(parsing: url, allowHTTP: true)
        for email in ["root@example.com", "ann@example.com"] {
            let home = try TemporaryDirectory()
            defer { home.remove() }
            #expect(
                try await makeClient(home, SpyTransport()).signup(at: address, email: email, password: Self.password)
                    == .pending(.waiting))
            #expect(try ServerProcess.run(["users", "approve", email, "--database", database]).status == 0)
        }
        #expect(
            try ServerProcess.run(["users", "groups", "root@example.com", "add", "admin", "--database", database])
                .status == 0)

        // The admin's phone: may invite, invites ann's brother into family, sees it listed, revokes it.
        let adminHome = try TemporaryDirectory()
        defer { adminHome.remove() }
        let admin = try makeClient(adminHome, SpyTransport())
        guard
            case .signedIn(let record) = try await admin.login(
                at: address, email: "root@example.com", password: Self.password)
        else { throw RawHTTPError("the admin did not sign in") }
        #expect(try await admin.account(on: record).canInvite == true)
        let made = try await admin.invite(on: record, groups: ["family"], uses: 2, expiresIn: 3600)
        let code = try #require(made.code)
        #expect(made.link == url + "/account/signup?invitation=" + code && made.groups == ["family"])
        #expect(try await admin.invitations(on: record).map(\.id) == [made.id])
        let newcomerHome = try TemporaryDirectory()
        defer { newcomerHome.remove() }
        guard
            case .signedIn(let bob) = try await makeClient(newcomerHome, SpyTransport()).signup(
                at: address, email: "bob@example.com", password: Self.password, invitation: code)
        else { throw RawHTTPError("the invitation did not sign bob up past the queue") }
        #expect(bob.email == "bob@example.com")
        try await admin.revokeInvitation(made.id, on: record)
        #expect(try await admin.invitations(on: record).first?.revokedAt != nil)

        // Ann is no admin: her phone is told so, and cannot revoke the admin's invitations either.
        let annHome = try TemporaryDirectory()
        defer { annHome.remove() }
        let annClient = try makeClient(annHome, SpyTransport())
        guard
            case .signedIn(let ann) = try await annClient.login(
                at: address, email: "ann@example.com", password: Self.password)
        else { throw RawHTTPError("ann did not sign in") }
        #expect(try await annClient.account(on: ann).canInvite == false)
        await #expect {
            try await annClient.invite(on: ann)
        } throws: { error in
            guard case .refused(_, let status, let code, _, _) = error as? ClientError else { return false }
            return status == 403 && code == "forbidden"
        }
        await #expect {
            try await annClient.revokeInvitation(made.id, on: ann)
        } throws: { error in
            guard case .refused(_, let status, _, _, _) = error as? ClientError else { return false }
            return status == 404
        }

        // The command line: `homeport invite` mails a bound invitation; list and revoke.
        let cliHome = try TemporaryDirectory()
        defer { cliHome.remove() }
        let environment = ["HOMEPORT_HOME": cliHome.path, "HOMEPORT_NETWORK_PATH": "home"]
        let login = try ServerProcess.runClient(
            ["login", url, "--allow-http", "--email", "root@example.com", "--password-stdin"],
            environment: environment, input: Self.password + "\n")
        #expect(login.status == 0, "\(login.error)")
        let invited = try ServerProcess.runClient(
            ["invite", url, "--email", "cy@example.com", "--expires", "2d", "--json"], environment: environment)
        #expect(invited.status == 0, "\(invited.error)")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(invited.output.utf8)) as? [String: Any], "\(invited.output)")
        let cliCode = try #require(object["code"] as? String)
        #expect(object["mailed"] as? Bool == true && object["email"] as? String == "cy@example.com")
        let mails = try FileManager.default.contentsOfDirectory(atPath: outbox).map {
            try String(contentsOfFile: outbox + "/" + $0, encoding: .utf8)
        }
        #expect(mails.contains { $0.contains(cliCode) && $0.contains("cy@example.com") }, "mailed to cy")
        let id = try #require(object["id"] as? Int)
        let listed = try ServerProcess.runClient(["invites", "list", url], environment: environment)
        #expect(listed.status == 0 && listed.output.contains("\(id)  cy@example.com  1 left"), "\(listed.output)")
        #expect(!listed.output.contains(cliCode), "never the code again")
        let operatorList = try ServerProcess.run(["invites", "list", "--database", database])
        #expect(operatorList.output.contains("\(id)  cy@example.com  1 left"), "\(operatorList.output)")
        #expect(operatorList.output.contains("by root@example.com"), "the operator sees who made it")
        let revoked = try ServerProcess.runClient(["invites", "revoke", url, String(id)], environment: environment)
        #expect(revoked.status == 0 && revoked.output.contains("revoked"), "\(revoked.output) \(revoked.error)")
        let unknown = try ServerProcess.runClient(["invites", "revoke", url, "99999"], environment: environment)
        #expect(unknown.status != 0 && unknown.error.contains("404"), "\(unknown.error)")
        let wrong = try ServerProcess.runClient(
            ["invite", url, "--groups", "Bad Name"], environment: environment)
        #expect(wrong.status != 0 && wrong.error.contains("group"), "\(wrong.error)")
    }
}
