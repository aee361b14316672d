/**
 * One error shape for every error response (decisions.md "Errors"):
 * `{ statusCode, error, message, details?: [{ path, message }] }`. No stack trace or internal
 * detail ever leaves the server: unexpected errors become a plain 500 and are logged.
 */
import type { FastifyError, FastifyInstance } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { STATUS_CODES } from 'node:http';

/** One offending field: `path` like `[3].strike` (batch item 3) or `startTime` (query). */
export interface ErrorDetail {
  readonly path: string;
  readonly message: string;
}

/** An error with a status the client should see. */
export class ApiError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    readonly details?: readonly ErrorDetail[],
    readonly headers?: Readonly<Record<string, string>>,
  ) {
    super(message);
  }
}

/** 400 listing every bad item of a request. */
export function badRequest(message: string, details?: readonly ErrorDetail[]): ApiError {
  return new ApiError(400, message, details);
}

/** `/3/strike` (JSON pointer from the validator) -> `[3].strike`; `/startTime` -> `startTime`. */
export function pointerToPath(pointer: string, inBody: boolean): string {
  const parts = pointer.split('/').filter((p) => p.length > 0);
  let out = '';
  for (const p of parts) {
    if (/^\d+$/.test(p)) out += `[${p}]`;
    else out += out.length === 0 ? p : `.${p}`;
  }
  return out.length === 0 ? (inBody ? 'body' : 'query') : out;
}

/** The JSON body of an error. */
export function errorBody(statusCode: number, message: string, details?: readonly ErrorDetail[]) {
  return {
    statusCode,
    error: STATUS_CODES[statusCode] ?? 'Error',
    message,
    ...(details && details.length > 0 ? { details } : {}),
  };
}

/** Install the error and not-found handlers on `app`. */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError | ApiError, req, reply) => {
    if (err instanceof ApiError) {
      if (err.headers) reply.headers(err.headers);
      return reply.status(err.statusCode).send(errorBody(err.statusCode, err.message, err.details));
    }
    if (hasZodFastifySchemaValidationErrors(err)) {
      const inBody = err.validationContext === 'body';
      const details = err.validation.map((v) => ({
        path: pointerToPath(v.instancePath, inBody),
        message: v.message ?? 'Invalid value',
      }));
      return reply.status(400).send(errorBody(400, `invalid request ${err.validationContext ?? ''}`.trim(), details));
    }
    const status = typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
    if (status === 500) {
      req.log.error({ err }, 'unhandled error');
      return reply.status(500).send(errorBody(500, 'internal error'));
    }
    // fastify's own 4xx (bad JSON, 413, 415...): keep the status, a clean message.
    const message = err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' ? 'Content-Type must be application/json' : err.message;
    return reply.status(status).send(errorBody(status, message));
  });
  // 405 before anything reads the body: fastify's own body handling would otherwise answer a QUERY without
  // Content-Type with its 400 first (RFC 10008), on the not-found route too
  app.addHook('onRequest', async (req, reply) => {
    if (!req.is404) return;
    const path = req.url.split('?')[0] ?? '/';
    const allowed = declaredMethods(app, path);
    if (allowed.length === 0) return;
    // RFC 9110 section 15.5.6: 405 on a path that exists, with Allow listing the methods it has
    reply.header('allow', allowed.join(', '));
    return reply.status(405).send(errorBody(405, `method ${req.method} not allowed on ${path} (allowed: ${allowed.join(', ')})`));
  });
  app.setNotFoundHandler((req, reply) => {
    reply.status(404).send(errorBody(404, `route ${req.method} ${req.url.split('?')[0]} not found`));
  });
}

/** Methods a route can be declared with (fastify's HTTP methods that this service may use). */
const ROUTABLE_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'] as const;

/**
 * The methods declared on the concrete `path` (HEAD included where fastify exposes it for a GET route);
 * empty when no route matches the path at all (then the answer is 404).
 */
export function declaredMethods(app: FastifyInstance, path: string): string[] {
  return ROUTABLE_METHODS.filter((method) => {
    try {
      return app.findRoute({ method, url: path }) !== null;
    } catch {
      return false;
    }
  });
}
