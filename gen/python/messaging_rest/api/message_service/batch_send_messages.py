from http import HTTPStatus
from typing import Any

import httpx

from ...client import AuthenticatedClient, Client
from ...models.batch_send_messages_request import BatchSendMessagesRequest
from ...models.batch_send_messages_response import BatchSendMessagesResponse
from ...models.error import Error
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    body: BatchSendMessagesRequest,
    idempotency_key: str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(idempotency_key, Unset):
        headers["Idempotency-Key"] = idempotency_key

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/messages:batch",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> BatchSendMessagesResponse | Error:
    if response.status_code == 200:
        response_200 = BatchSendMessagesResponse.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = Error.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = Error.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Error.from_dict(response.json())

        return response_403

    if response.status_code == 409:
        response_409 = Error.from_dict(response.json())

        return response_409

    if response.status_code == 413:
        response_413 = Error.from_dict(response.json())

        return response_413

    if response.status_code == 429:
        response_429 = Error.from_dict(response.json())

        return response_429

    if response.status_code == 500:
        response_500 = Error.from_dict(response.json())

        return response_500

    if response.status_code == 503:
        response_503 = Error.from_dict(response.json())

        return response_503

    response_default = Error.from_dict(response.json())

    return response_default


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[BatchSendMessagesResponse | Error]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: BatchSendMessagesRequest,
    idempotency_key: str | Unset = UNSET,
) -> Response[BatchSendMessagesResponse | Error]:
    """Sends up to 1,000 template messages in one request (AIP-233): each item is the body of a
    SendMessage, with its own recipient, sender, template and variables, checked and charged on its own.

     Sends up to 1,000 template messages in one request (AIP-233): each item is
    the body of a SendMessage, with its own recipient, sender, template and
    variables, checked and charged on its own. The answer has one result per
    item, in order: the accepted message, or the error that single send would
    have answered (invalid_argument, recipient_opted_out,
    insufficient_credits). Credits are spent for the accepted items only;
    items beyond the balance get insufficient_credits. Only a request that is
    wrong as a whole (no items, more than 1,000, a body over the size limit,
    a malformed Idempotency-Key) is refused as a whole. An Idempotency-Key
    header (gRPC: metadata) covers the whole batch: the same key and body
    answer the same results without spending again.

    Scope: `messages:send`.

    Args:
        idempotency_key (str | Unset):
        body (BatchSendMessagesRequest): Request of BatchSendMessages.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[BatchSendMessagesResponse | Error]
    """

    kwargs = _get_kwargs(
        body=body,
        idempotency_key=idempotency_key,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    body: BatchSendMessagesRequest,
    idempotency_key: str | Unset = UNSET,
) -> BatchSendMessagesResponse | Error | None:
    """Sends up to 1,000 template messages in one request (AIP-233): each item is the body of a
    SendMessage, with its own recipient, sender, template and variables, checked and charged on its own.

     Sends up to 1,000 template messages in one request (AIP-233): each item is
    the body of a SendMessage, with its own recipient, sender, template and
    variables, checked and charged on its own. The answer has one result per
    item, in order: the accepted message, or the error that single send would
    have answered (invalid_argument, recipient_opted_out,
    insufficient_credits). Credits are spent for the accepted items only;
    items beyond the balance get insufficient_credits. Only a request that is
    wrong as a whole (no items, more than 1,000, a body over the size limit,
    a malformed Idempotency-Key) is refused as a whole. An Idempotency-Key
    header (gRPC: metadata) covers the whole batch: the same key and body
    answer the same results without spending again.

    Scope: `messages:send`.

    Args:
        idempotency_key (str | Unset):
        body (BatchSendMessagesRequest): Request of BatchSendMessages.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        BatchSendMessagesResponse | Error
    """

    return sync_detailed(
        client=client,
        body=body,
        idempotency_key=idempotency_key,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: BatchSendMessagesRequest,
    idempotency_key: str | Unset = UNSET,
) -> Response[BatchSendMessagesResponse | Error]:
    """Sends up to 1,000 template messages in one request (AIP-233): each item is the body of a
    SendMessage, with its own recipient, sender, template and variables, checked and charged on its own.

     Sends up to 1,000 template messages in one request (AIP-233): each item is
    the body of a SendMessage, with its own recipient, sender, template and
    variables, checked and charged on its own. The answer has one result per
    item, in order: the accepted message, or the error that single send would
    have answered (invalid_argument, recipient_opted_out,
    insufficient_credits). Credits are spent for the accepted items only;
    items beyond the balance get insufficient_credits. Only a request that is
    wrong as a whole (no items, more than 1,000, a body over the size limit,
    a malformed Idempotency-Key) is refused as a whole. An Idempotency-Key
    header (gRPC: metadata) covers the whole batch: the same key and body
    answer the same results without spending again.

    Scope: `messages:send`.

    Args:
        idempotency_key (str | Unset):
        body (BatchSendMessagesRequest): Request of BatchSendMessages.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[BatchSendMessagesResponse | Error]
    """

    kwargs = _get_kwargs(
        body=body,
        idempotency_key=idempotency_key,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    body: BatchSendMessagesRequest,
    idempotency_key: str | Unset = UNSET,
) -> BatchSendMessagesResponse | Error | None:
    """Sends up to 1,000 template messages in one request (AIP-233): each item is the body of a
    SendMessage, with its own recipient, sender, template and variables, checked and charged on its own.

     Sends up to 1,000 template messages in one request (AIP-233): each item is
    the body of a SendMessage, with its own recipient, sender, template and
    variables, checked and charged on its own. The answer has one result per
    item, in order: the accepted message, or the error that single send would
    have answered (invalid_argument, recipient_opted_out,
    insufficient_credits). Credits are spent for the accepted items only;
    items beyond the balance get insufficient_credits. Only a request that is
    wrong as a whole (no items, more than 1,000, a body over the size limit,
    a malformed Idempotency-Key) is refused as a whole. An Idempotency-Key
    header (gRPC: metadata) covers the whole batch: the same key and body
    answer the same results without spending again.

    Scope: `messages:send`.

    Args:
        idempotency_key (str | Unset):
        body (BatchSendMessagesRequest): Request of BatchSendMessages.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        BatchSendMessagesResponse | Error
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
            idempotency_key=idempotency_key,
        )
    ).parsed
