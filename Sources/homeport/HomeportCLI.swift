import Foundation
import HomeportClient
import HomeportCommandLine
import HomeportWire

#if canImport(Glibc)
    import Glibc
#endif

/// `homeport`: the client on the command line. Parsing and wiring only.
@main
enum HomeportCLI {
    static let overview = """
        homeport: reach your self-hosted servers through every address they have, safely.

        Usage: homeport COMMAND [options]

        Commands:
          login URL --email EMAIL --password-stdin [--allow-http] [--signup]
                                     Sign in (or sign up) at URL, which becomes the server's primary address.
          servers                    List enrolled servers and their addresses.
          servers rename SERVER LABEL
                                     Name SERVER on this device; every command shows the name and takes it as SERVER.
          address add SERVER URL [--allow-http]
                                     Add an alternative address (probed first; kept only if it is the same installation).
          address primary SERVER URL [--allow-http]
                                     Make URL the primary (a server that moved), once it answers as the installation.
          address remove SERVER URL  Remove an alternative address.
          address verify SERVER      Probe every address of SERVER on this network.
          whoami SERVER              Call app-info through the address chosen on this network, and say which.
          password change SERVER --password-stdin
                                     Change the password (current, then new, one a line on standard input).
          password reset URL --email EMAIL [--allow-http]
                                     Ask the server at URL to mail a password-reset key.
          password reset URL --key KEY --password-stdin [--allow-http]
                                     Set a new password with the mailed key (every session ends; sign in again).
          logout SERVER              Sign out (the local session is erased even if the server cannot be asked).
          account delete SERVER --password-stdin
                                     Delete the account on SERVER, then forget SERVER on this device.
          mfa totp enable|disable SERVER --password-stdin
                                     Turn two-factor sign-in on (key shown, code read from the next line) or off.
          mfa recovery-codes SERVER --password-stdin
                                     Make new recovery codes and print them, this once.
          mfa status SERVER          Say whether SERVER asks this account for a second factor.
          invite SERVER [--email ADDR] [--groups LIST] [--uses N] [--expires 7d]
                                     Invite someone (if SERVER lets you): a code and link that sign them up.
          invites list SERVER        List the invitations you made (invites revoke SERVER ID revokes one).
          remove SERVER              Forget SERVER locally: its credential, its record and its catalogue.
          network                    Show the network path the client is on.
          push register SERVER DEVICE_TOKEN [--environment sandbox|production]
                                     Register this device's push token with SERVER.
          push unregister SERVER     Withdraw the push token this device registered with SERVER.
          push route [FILE|-]        Say which enrolled server a push payload came from, its thread, its deep
                                     link and whether that server's catalogue needs a resync (exit 3: nobody's).
          push catalogue SERVER      Fetch and show SERVER's notification catalogue.
          push test SERVER           Ask SERVER to push a test notification to this account's devices.
          mute SERVER THREAD         Mute a thread on SERVER (unmute SERVER THREAD undoes it; mutes SERVER lists).
          notifications watch SERVER Print SERVER's notifications as they come, reconnecting with Last-Event-ID.
          api SERVER [METHOD] PATH [--data JSON|-]
                                     Call any route of SERVER's API (a product's own) with this device's session,
                                     through the verified address; exit 5 for a 4xx answer, 6 for a 5xx.
          conformance URL            Check the server at URL against the Homeport protocol: a pass/fail table.

        Every command that prints a result takes --json; every command that reaches a server takes
        --proxy URL (no proxy is ever taken from the environment: http_proxy, ALL_PROXY, … are ignored)
        and --ca-file PATH (a private CA to trust instead of the system's; the certificate's name is still
        checked). Run 'homeport COMMAND --help' for its options.

        SERVER is an instance id, its label (homeport servers rename), a unique prefix of the id, or the
        primary URL.
        State lives in $HOMEPORT_HOME (default $XDG_CONFIG_HOME/homeport, else ~/.config/homeport): created
        0700 (with any missing parent) when missing; refused, and left as it is, when another user owns it or
        others can write to it. Several homeport commands may run at once: each change waits for the others'
        at most $HOMEPORT_LOCK_TIMEOUT seconds (10 by default), then fails naming the process that holds it.
        The network path comes from the system (the default route's interface, gateway and the gateway's
        hardware address); $HOMEPORT_NETWORK_PATH overrides it. Addresses verified on another network are
        probed again before any credential is sent.
        Exit codes: 0 success, 1 failure, 2 bad command line, 3 refused for safety (another installation, not
        the API, an off-host redirect, plain HTTP not allowed, no verified address, an unsafe state directory,
        a push that cannot be attributed to an enrolled server; the message says whether anything was sent),
        4 signed out; 'api' adds 5 and 6 for the server's 4xx and 5xx answers.
        """

    static func main() async {
        #if canImport(Glibc)
            CurlTransport.prepareProcess()
        #endif
        let arguments = Array(CommandLine.arguments.dropFirst())
        let environment = ProcessInfo.processInfo.environment
        let code: Int32
        do {
            code = try await run(arguments, environment: environment)
        } catch let error as UsageError {
            Commands.warn("homeport: \(error.description)")
            code = 2
        } catch let error as ClientError {
            Commands.warn("homeport: \(error.description)" + (Self.advice(for: error).map { "; " + $0 } ?? ""))
            code = Self.exitCode(for: error)
        } catch {
            Commands.warn("homeport: error: \(error)")
            code = 1
        }
        exit(code)
    }

    /// What to type next, for the errors whose way out is one of this tool's flags or commands
    /// (the library's own sentences name none).
    static func advice(for error: ClientError) -> String? {
        switch error {
        case .invalidAddress: "use https://HOST[:PORT] (or http:// with --allow-http)"
        case .plainHTTPNotAllowed: "add --allow-http to use it for this address"
        case .unknownServer, .ambiguousServer: "see 'homeport servers'"
        case .signedOut: "sign in again with 'homeport login'"
        case .signInNotKept(let reason, _): advice(for: reason)
        default: nil
        }
    }

    static func exitCode(for error: ClientError) -> Int32 {
        switch error {
        case .identityMismatch, .notAnAPI, .offHostRedirect, .noVerifiedAddress, .plainHTTPNotAllowed, .sessionKept,
            .alternativeDisowned, .claimNotConfirmed, .probeFailed, .unsafeDirectory:
            3
        case .signedOut: 4
        case .invalidAddress, .unknownServer, .ambiguousServer, .addressNotApplicable, .invalidInput: 2
        case .signInNotKept(let reason, _): exitCode(for: reason)
        default: 1
        }
    }

    static func run(_ arguments: [String], environment: [String: String]) async throws -> Int32 {
        guard let command = arguments.first, !["-h", "--help", "help"].contains(command) else {
            Output.line(overview)
            return 0
        }
        let rest = Array(arguments.dropFirst())
        let groups = [
            ("address", "add, primary, remove or verify"), ("password", "change or reset"), ("account", "delete"),
            ("push", "register, unregister, route, catalogue or test"), ("notifications", "watch"),
            ("mfa", "totp enable|disable, recovery-codes or status"), ("invites", "create, list or revoke"),
        ]
        for (group, actions) in groups where command == group {
            guard let action = rest.first, !action.hasPrefix("-") else {
                if rest.contains("--help") || rest.contains("-h") {
                    Output.line(overview)
                    return 0
                }
                throw UsageError("\(group) needs an action: \(actions)")
            }
            let arguments = Array(rest.dropFirst())
            switch group {
            case "address": return try await Commands.address(action, arguments, environment)
            case "password": return try await Commands.password(action, arguments, environment)
            case "account": return try await Commands.account(action, arguments, environment)
            case "push": return try await Commands.push(action, arguments, environment)
            case "mfa": return try await Commands.mfa(action, arguments, environment)
            case "invites": return try await Commands.invites(action, arguments, environment)
            default: return try await Commands.notifications(action, arguments, environment)
            }
        }
        switch command {
        case "login": return try await Commands.login(rest, environment)
        case "invite": return try await Commands.invites("create", rest, environment)
        case "servers": return try Commands.servers(rest, environment)
        case "whoami": return try await Commands.whoami(rest, environment)
        case "logout": return try await Commands.logout(rest, environment)
        case "remove": return try await Commands.remove(rest, environment)
        case "network": return try Commands.network(rest, environment)
        case "mute", "unmute", "mutes": return try await Commands.mute(command, rest, environment)
        case "conformance": return try await Commands.conformance(rest, environment)
        case "api": return try await Commands.api(rest, environment)
        default: throw UsageError("unknown command '\(command)'; run 'homeport --help'")
        }
    }
}
