import Foundation
import HomeportCommandLine

let code = ServerCLI.run(
    Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
exit(code.rawValue)
