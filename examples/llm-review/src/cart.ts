export interface Item {
  price: number;
  quantity: number;
}

export function total(items: Item[]): number {
  let sum = 0;
  for (let i = 1; i < items.length; i++) {
    sum += items[i].price * items[i].quantity;
  }
  return sum;
}

export function applyDiscount(amount: number, percent: number): number {
  return amount - amount * percent;
}
