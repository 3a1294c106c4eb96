import type { DescService } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { apiError } from "../shared/errors.js";

/**
 * A service and its handlers, served on one port over every protocol: the
 * Connect router (Connect, gRPC, gRPC-Web) and the REST gateway both take
 * their handlers from here.
 */
export interface ServiceRegistration {
  /** The generated service descriptor. */
  readonly service: DescService;
  /** A handler for every method of the service. */
  readonly impl: ServiceImpl<DescService>;
}

/**
 * Registers `impl` for `service`. Methods `impl` leaves out answer
 * `unimplemented` (HTTP 501, gRPC UNIMPLEMENTED) over every protocol, with
 * the usual error details, until a capability provides them.
 */
export function registerService<S extends DescService>(service: S, impl: Partial<ServiceImpl<S>>): ServiceRegistration {
  const complete: Record<string, unknown> = { ...impl };
  for (const method of service.methods) {
    if (complete[method.localName] === undefined) {
      complete[method.localName] = () => {
        throw apiError("unimplemented", `${service.typeName}/${method.name} is not available yet`, {
          operation: `${service.typeName}/${method.name}`,
        });
      };
    }
  }
  return { service, impl: complete as ServiceImpl<DescService> };
}
