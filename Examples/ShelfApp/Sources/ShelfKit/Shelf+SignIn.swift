import Foundation
import HomeportClient

extension Shelf {
    /// Asks the server at `text` who it is, before anything is stored or any password typed: the
    /// sheet then shows ``Step/preview(_:)`` ("BookOrbit, id 6f1c…, key SHA256:…"). An address
    /// that is not a Homeport server (a web page, a router's login, another host) is a notice.
    public func lookUp(_ text: String) async {
        do {
            let address = try ServerAddress(
                parsing: text.trimmingCharacters(in: .whitespaces), allowHTTP: allowsPlainHTTP)
            step = .preview(try await client.identify(at: address))
        } catch {
            show(error)
        }
    }

    /// Keeps the previewed server without an account (signed in later, or by someone else on
    /// this device), and shows it.
    public func keepPreviewed() async {
        guard case .preview(let preview) = step else { return }
        do {
            let record = try await client.enroll(at: preview.address)
            step = nil
            reload()
            await select(record.localID)
        } catch {
            show(error)
        }
    }

    /// Signs in (or, with `creatingAccount`, signs up) at the previewed server, or at the server
    /// shown when nothing is previewed. The password goes only to an address that answered as the
    /// installation (the preview's, or one the client verifies now) and is never kept. What comes
    /// next is the next ``step``: nothing (signed in), a second factor, a mailed code, or the
    /// operator's approval.
    public func signIn(email: String, password: String, creatingAccount: Bool = false) async {
        do {
            let address: ServerAddress
            switch step {
            case .preview(let preview): address = preview.address
            default:
                guard let selected else { return }
                // The stored primary only once it answers as this installation: on another
                // network, a plain-HTTP address may be someone else's.
                let answered = try await client.identify(at: selected.primary)
                guard answered.identity.instanceId == selected.instanceID else {
                    notice = Notice(
                        "\(Self.name(of: selected)) at \(selected.primary.url) answers as another installation.",
                        advice: "Your password was not sent. Sign in on the network where the library is.")
                    return
                }
                address = answered.address
            }
            await finish(
                creatingAccount
                    ? try await client.signup(at: address, email: email, password: password)
                    : try await client.login(at: address, email: email, password: password))
        } catch {
            show(error)
        }
    }

    /// Sends the code the person typed: their authenticator's (or a recovery code) for
    /// ``Step/secondFactor(_:)``, the mailed one for ``Step/emailCode(_:)``. A wrong code is a
    /// notice, and the step stays for another try.
    public func submit(code: String) async {
        let code = code.trimmingCharacters(in: .whitespaces)
        do {
            switch step {
            case .secondFactor(let pending): await finish(try await client.completeSecondFactor(pending, code: code))
            case .emailCode(let pending): await finish(try await client.verifyEmail(pending, code: code))
            default: return
            }
        } catch {
            show(error)
        }
    }

    /// Closes the sheet without signing in.
    public func cancelStep() {
        step = nil
    }

    /// What a sign-in came to.
    private func finish(_ result: HomeportClient.SignInResult) async {
        switch result {
        case .signedIn(let record):
            step = nil
            reload()
            await select(record.localID)
        case .secondFactorRequired(let pending): step = .secondFactor(pending)
        case .verificationRequired(let pending): step = .emailCode(pending)
        case .pending(let standing): step = .waiting(standing)
        case .providerSignupRequired:
            // Shelf signs in with passwords only; an identity provider's sign-in is the browser's.
            step = nil
            notice = Notice("This server signs you in through your identity provider.")
        }
    }
}
