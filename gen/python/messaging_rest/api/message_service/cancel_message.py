from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...models.cancel_message_request import CancelMessageRequest
from ...models.error import Error
from ...models.message import Message
from ...types import Response


def _get_kwargs(
    id: str,
    *,
    body: CancelMessageRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/messages/{id}:cancel".format(
            id=quote(str(id), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | Message:
    if response.status_code == 200:
        response_200 = Message.from_dict(response.json())

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

    if response.status_code == 404:
        response_404 = Error.from_dict(response.json())

        return response_404

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
) -> Response[Error | Message]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    id: str,
    *,
    client: AuthenticatedClient,
    body: CancelMessageRequest,
) -> Response[Error | Message]:
    """Cancels a message of the calling key that waits to be handed to the network: scheduled (send_at in
    the future), or accepted and waiting in the dispatch queue (not being sent at this instant).

     Cancels a message of the calling key that waits to be handed to the
    network: scheduled (send_at in the future), or accepted and waiting in the
    dispatch queue (not being sent at this instant). The message becomes
    canceled, its credits are given back (ledger entry refund:<message id>)
    and message.canceled fires. A message being handed to the network or
    past it (sent, delivered, read, failed, canceled) is refused with
    failed_precondition; a message of another key is not found.

    Scope: `messages:send`.

    Args:
        id (str):
        body (CancelMessageRequest): Request of CancelMessage.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | Message]
    """

    kwargs = _get_kwargs(
        id=id,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    id: str,
    *,
    client: AuthenticatedClient,
    body: CancelMessageRequest,
) -> Error | Message | None:
    """Cancels a message of the calling key that waits to be handed to the network: scheduled (send_at in
    the future), or accepted and waiting in the dispatch queue (not being sent at this instant).

     Cancels a message of the calling key that waits to be handed to the
    network: scheduled (send_at in the future), or accepted and waiting in the
    dispatch queue (not being sent at this instant). The message becomes
    canceled, its credits are given back (ledger entry refund:<message id>)
    and message.canceled fires. A message being handed to the network or
    past it (sent, delivered, read, failed, canceled) is refused with
    failed_precondition; a message of another key is not found.

    Scope: `messages:send`.

    Args:
        id (str):
        body (CancelMessageRequest): Request of CancelMessage.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | Message
    """

    return sync_detailed(
        id=id,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    id: str,
    *,
    client: AuthenticatedClient,
    body: CancelMessageRequest,
) -> Response[Error | Message]:
    """Cancels a message of the calling key that waits to be handed to the network: scheduled (send_at in
    the future), or accepted and waiting in the dispatch queue (not being sent at this instant).

     Cancels a message of the calling key that waits to be handed to the
    network: scheduled (send_at in the future), or accepted and waiting in the
    dispatch queue (not being sent at this instant). The message becomes
    canceled, its credits are given back (ledger entry refund:<message id>)
    and message.canceled fires. A message being handed to the network or
    past it (sent, delivered, read, failed, canceled) is refused with
    failed_precondition; a message of another key is not found.

    Scope: `messages:send`.

    Args:
        id (str):
        body (CancelMessageRequest): Request of CancelMessage.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | Message]
    """

    kwargs = _get_kwargs(
        id=id,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    id: str,
    *,
    client: AuthenticatedClient,
    body: CancelMessageRequest,
) -> Error | Message | None:
    """Cancels a message of the calling key that waits to be handed to the network: scheduled (send_at in
    the future), or accepted and waiting in the dispatch queue (not being sent at this instant).

     Cancels a message of the calling key that waits to be handed to the
    network: scheduled (send_at in the future), or accepted and waiting in the
    dispatch queue (not being sent at this instant). The message becomes
    canceled, its credits are given back (ledger entry refund:<message id>)
    and message.canceled fires. A message being handed to the network or
    past it (sent, delivered, read, failed, canceled) is refused with
    failed_precondition; a message of another key is not found.

    Scope: `messages:send`.

    Args:
        id (str):
        body (CancelMessageRequest): Request of CancelMessage.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | Message
    """

    return (
        await asyncio_detailed(
            id=id,
            client=client,
            body=body,
        )
    ).parsed
